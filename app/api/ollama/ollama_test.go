package ollama

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"homering/app/api/apitype"
)

func TestFromRequests(t *testing.T) {
	temp, seed := 0.0, int64(4)
	for _, tc := range []struct {
		name    string
		chat    bool
		in      string
		want    apitype.ChatRequest
		wantErr bool
	}{
		{"chat with options", true, `{"model":"m","messages":[{"role":"user","content":"Hi"}],"options":{"temperature":0,"num_predict":6,"num_ctx":1024,"seed":4}}`,
			apitype.ChatRequest{Model: "m", Messages: []apitype.ChatMessage{{Role: "user", Content: "Hi"}}, Temperature: &temp, MaxTokens: 6, NumCtx: 1024, Seed: &seed}, false},
		{"num_predict -1 means no limit", true, `{"messages":[{"role":"user","content":"Hi"}],"options":{"num_predict":-1}}`,
			apitype.ChatRequest{Messages: []apitype.ChatMessage{{Role: "user", Content: "Hi"}}}, false},
		{"chat without messages", true, `{"messages":[]}`, apitype.ChatRequest{}, true},
		{"chat with a bad role", true, `{"messages":[{"role":"function","content":"x"}]}`, apitype.ChatRequest{}, true},
		{"chat with tools, a call and its result", true, `{"tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"x"},` +
			`{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":{"a":1}}}]},{"role":"tool","content":"ok","tool_name":"f"}]}`,
			apitype.ChatRequest{Tools: []apitype.Tool{{Function: `{"name":"f"}`}}, Messages: []apitype.ChatMessage{{Role: "user", Content: "x"},
				{Role: "assistant", ToolCalls: []apitype.ToolCall{{ID: "call_1_0", Name: "f", Arguments: `{"a":1}`}}},
				{Role: "tool", Content: "ok", ToolCallID: "call_1_0"}}}, false},
		{"chat with a tool that is not a function", true, `{"tools":[{"type":"function","function":{}}],"messages":[{"role":"user","content":"x"}]}`, apitype.ChatRequest{}, true},
		{"generate templated", false, `{"model":"m","prompt":"Why?","system":"Be brief."}`,
			apitype.ChatRequest{Model: "m", System: "Be brief.", Messages: []apitype.ChatMessage{{Role: "user", Content: "Why?"}}}, false},
		{"generate raw", false, `{"prompt":"Once","raw":true}`, apitype.ChatRequest{Prompt: "Once"}, false},
		{"generate empty", false, `{"prompt":""}`, apitype.ChatRequest{}, true},
		{"negative num_ctx", false, `{"prompt":"x","options":{"num_ctx":-5}}`, apitype.ChatRequest{}, true},
		{"format json is any object", true, `{"messages":[{"role":"user","content":"Hi"}],"format":"json"}`,
			apitype.ChatRequest{Messages: []apitype.ChatMessage{{Role: "user", Content: "Hi"}}, JSONSchema: `{"type":"object"}`}, false},
		{"format schema", false, `{"prompt":"x","raw":true,"format":{"type":"object","required":["a"]}}`,
			apitype.ChatRequest{Prompt: "x", JSONSchema: `{"type":"object","required":["a"]}`}, false},
		{"format empty is text", true, `{"messages":[{"role":"user","content":"Hi"}],"format":""}`,
			apitype.ChatRequest{Messages: []apitype.ChatMessage{{Role: "user", Content: "Hi"}}}, false},
		{"format of another kind", false, `{"prompt":"x","format":"yaml"}`, apitype.ChatRequest{}, true},
		{"format that is an array", true, `{"messages":[{"role":"user","content":"Hi"}],"format":[1]}`, apitype.ChatRequest{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got apitype.ChatRequest
			var err error
			if tc.chat {
				var in ChatRequest
				_ = json.Unmarshal([]byte(tc.in), &in)
				got, err = FromChat(in)
			} else {
				var in GenerateRequest
				_ = json.Unmarshal([]byte(tc.in), &in)
				got, err = FromGenerate(in)
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestResponses(t *testing.T) {
	at := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	st := apitype.ChatStats{PromptTokens: 4, CompletionTokens: 10, PromptMS: 2, TotalMS: 12.5, TokensPerSecond: 1000, StopReason: "stop"}
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"chat piece", ChatPiece("m", at, "Hi"), `{"model":"m","created_at":"2026-11-22T12:00:00Z","message":{"role":"assistant","content":"Hi"},"done":false}`},
		{"chat done", ChatDone("m", at, "", st),
			`{"model":"m","created_at":"2026-11-22T12:00:00Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":12500000,"prompt_eval_count":4,"prompt_eval_duration":2000000,"eval_count":10,"eval_duration":10000000}`},
		{"generate piece", GeneratePiece("m", at, "a"), `{"model":"m","created_at":"2026-11-22T12:00:00Z","response":"a","done":false}`},
		{"tags", TagsOf([]Model{{Name: "s", Size: 3, Modified: time.Unix(0, 0), Digest: "ab", Arch: "llama", Params: 292_000, Quant: "q8_0"}}),
			`{"models":[{"name":"s","model":"s","modified_at":"1970-01-01T00:00:00Z","size":3,"digest":"ab","details":{"parent_model":"","format":"gguf","family":"llama","families":["llama"],"parameter_size":"292K","quantization_level":"Q8_0"}}]}`},
		{"show", Show(Model{Name: "s", Modified: at, Arch: "llama", Params: 8_030_000_000, Quant: "q4_k"}, map[string]any{"general.architecture": "llama", "llama.context_length": 8192}),
			`{"details":{"parent_model":"","format":"gguf","family":"llama","families":["llama"],"parameter_size":"8.0B","quantization_level":"Q4_K"},"model_info":{"general.architecture":"llama","general.parameter_count":8030000000,"llama.context_length":8192},"capabilities":["completion"],"modified_at":"2026-11-22T12:00:00Z"}`},
		{"ps", PS(&Model{Name: "s", Size: 5, Digest: "ab", Arch: "llama"}, 4096, at),
			`{"models":[{"name":"s","model":"s","size":5,"digest":"ab","details":{"parent_model":"","format":"gguf","family":"llama","families":["llama"],"parameter_size":"","quantization_level":""},"expires_at":"2026-11-22T12:00:00Z","size_vram":0,"context_length":4096}]}`},
		{"nothing loaded", PS(nil, 0, at), `{"models":[]}`},
		{"not found", NotFound("llama3.2:1b"), `{"error":"model 'llama3.2:1b' not found; GET /api/tags lists the models this device has"}`},
		{"no tags", TagsOf(nil), `{"models":[]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := json.Marshal(tc.v)
			if diff := cmp.Diff(tc.want, string(b)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestStreams(t *testing.T) {
	f, tr := false, true
	if !Streams(nil) || !Streams(&tr) || Streams(&f) {
		t.Error("stream defaults to true, as Ollama's does")
	}
}

func TestHumanNumber(t *testing.T) {
	for n, want := range map[int64]string{0: "", 999: "999", 292_000: "292K", 1_240_000: "1.24M", 7_000_000: "7M", 1_235_814_400: "1.2B", 8_000_000_000: "8B"} {
		if got := HumanNumber(n); got != want {
			t.Errorf("HumanNumber(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestVersionIsPinnedModule: /api/version reports the version of the
// ollama module whose API these types follow (go.mod's pin).
func TestVersionIsPinnedModule(t *testing.T) {
	b, err := os.ReadFile("../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/ollama/ollama v(\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod does not require github.com/ollama/ollama")
	}
	if string(m[1]) != Version {
		t.Errorf("ollama.Version is %q but go.mod pins github.com/ollama/ollama v%s; update Version with the pin", Version, m[1])
	}
}
