package bytesize

import "fmt"

// Text is n bytes with one decimal in the largest binary unit that keeps it
// at least 1: "512 B", "1.5 KiB", "7.0 MiB", "3.1 GiB".
func Text(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
