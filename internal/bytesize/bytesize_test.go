package bytesize

import "testing"

func TestText(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1536, "1.5 KiB"},
		{1<<20 - 1, "1024.0 KiB"},
		{7 << 20, "7.0 MiB"},
		{3<<30 + 1<<29, "3.5 GiB"},
		{1 << 40, "1024.0 GiB"},
	} {
		if got := Text(c.n); got != c.want {
			t.Errorf("Text(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
