package tray

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
)

// iconPNG draws the tray icon of a state: a ring (the ring of devices), grey
// when off, green when contributing, amber with a centre dot when busy.
// 32×32 is what SNI hosts and Windows ask for; they scale it.
func iconPNG(k iconKind) []byte {
	const size = 32
	col := map[iconKind]color.NRGBA{
		iconOff:          {0x9a, 0x9a, 0x9a, 0xff},
		iconContributing: {0x2e, 0xa0, 0x43, 0xff},
		iconBusy:         {0xf0, 0x9a, 0x1a, 0xff},
	}[k]
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	c := float64(size-1) / 2
	for y := range size {
		for x := range size {
			d := math.Hypot(float64(x)-c, float64(y)-c)
			// antialiased ring between radius 9.5 and 14.5
			a := math.Min(clamp01(d-9), clamp01(15-d))
			if k == iconBusy {
				a = math.Max(a, clamp01(5-d)) // the dot: a token in flight
			}
			if a > 0 {
				img.SetNRGBA(x, y, color.NRGBA{col.R, col.G, col.B, uint8(a * 255)})
			}
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img) // writing to memory cannot fail
	return b.Bytes()
}

func clamp01(v float64) float64 { return math.Max(0, math.Min(1, v)) }
