package tray

import (
	"encoding/binary"
	"runtime"
)

// iconBytes is what systray.SetIcon takes on this OS: the PNG itself, or on
// Windows, whose tray loads only ICO, the PNG wrapped in a one-entry ICO
// (Windows Vista and later read PNG-compressed entries).
func iconBytes(png []byte, goos string) []byte {
	if goos != "windows" {
		return png
	}
	return icoFromPNG(png)
}

// icoFromPNG wraps a PNG in an ICO header with one directory entry whose
// size is the PNG's (0 meaning 256, as ICO spells it).
func icoFromPNG(png []byte) []byte {
	dim := func(off int) byte {
		if len(png) < off+4 {
			return 0
		}
		v := binary.BigEndian.Uint32(png[off:])
		if v >= 256 {
			return 0
		}
		return byte(v)
	}
	b := make([]byte, 22, 22+len(png))
	binary.LittleEndian.PutUint16(b[2:], 1) // type: icon
	binary.LittleEndian.PutUint16(b[4:], 1) // one image
	b[6], b[7] = dim(16), dim(20)           // width, height from the PNG's IHDR
	binary.LittleEndian.PutUint16(b[10:], 1)
	binary.LittleEndian.PutUint16(b[12:], 32) // bits per pixel
	binary.LittleEndian.PutUint32(b[14:], uint32(len(png)))
	binary.LittleEndian.PutUint32(b[18:], 22) // the image follows the directory
	return append(b, png...)
}

// trayIcon is the bytes of an icon kind for this OS's tray.
func trayIcon(k iconKind) []byte { return iconBytes(iconPNG(k), runtime.GOOS) }
