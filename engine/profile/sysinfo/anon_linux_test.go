package sysinfo

import "testing"

func TestParseRssAnon(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"Name:\tx\nVmRSS:\t  900 kB\nRssAnon:\t   1234 kB\nRssFile:\t 10 kB\n", 1234 * 1024},
		{"Name:\tx\nRssFile:\t 10 kB\n", 0},
		{"Name:\tx\nRssAnon:\t\n", 0},
	} {
		if got := parseRssAnon([]byte(tc.in)); got != tc.want {
			t.Errorf("parseRssAnon(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
	if ProcessAnon() <= 0 {
		t.Error("this process holds no anonymous memory, says /proc/self/status")
	}
}
