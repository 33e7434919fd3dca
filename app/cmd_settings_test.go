package app

import (
	"strconv"
	"strings"
	"testing"

	"homering/app/api/apitype"
)

func TestSetSetting(t *testing.T) {
	var s apitype.Settings
	for _, kv := range []string{"memory_budget=512MiB", "context_tokens=2048", "model=/m/x.gguf", "expose=true", "ring_keep_seconds=0", "gpu=off", "api_port=8765", "draft=/m/small.gguf"} {
		if err := setSetting(&s, kv); err != nil {
			t.Fatalf("%s: %v", kv, err)
		}
	}
	want := apitype.Settings{MemoryBudget: 512 << 20, ContextTokens: 2048, Model: "/m/x.gguf", Expose: true, GPU: "off", APIPort: 8765, Draft: "/m/small.gguf"}
	if s != want {
		t.Errorf("settings %+v, want %+v", s, want)
	}
	for _, tc := range []struct{ in, want string }{{"draft=off", "off"}, {"draft=auto", ""}, {"draft=/m/small.gguf", "/m/small.gguf"}} {
		if err := setSetting(&s, tc.in); err != nil || s.Draft != tc.want {
			t.Errorf("%s: draft %q, %v; want %q", tc.in, s.Draft, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, wantBytes string }{{"memory_budget=1.5GiB", "1610612736"}, {"memory_budget=2GB", "2000000000"}, {"memory_budget=4096", "4096"}} {
		if err := setSetting(&s, tc.in); err != nil || tc.wantBytes != strconv.FormatInt(s.MemoryBudget, 10) {
			t.Errorf("%s: %d, %v; want %s", tc.in, s.MemoryBudget, err, tc.wantBytes)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"memory_budget", "is not KEY=VALUE"},
		{"memory_budget=lots", "give a size"},
		{"memory_budget=-1GiB", "give a size"},
		{"context_tokens=many", "whole number"},
		{"expose=perhaps", "true or false"},
		{"gpu=false", "give on or off"},
		{"colour=blue", `unknown setting "colour"`},
	} {
		if err := setSetting(&s, tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.in, err, tc.want)
		}
	}
}
