package api

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// compatCall sends a compatible API request and decodes its JSON answer
// into out (when not nil).
func compatCall(t *testing.T, srv *httptest.Server, method, path, body string, out any) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return send(t, srv, req, out)
}

// TestCompatModels: /v1/models and /api/tags list the selected model and
// every usable GGUF of the stores (writeStores) by the model list's names,
// the broken file and a second "tiny" left out; a request naming one runs
// that file (ModelPath) under that name, by any spelling Ollama's clients
// use; /api/show describes it from its header and /api/ps shows it loaded.
func TestCompatModels(t *testing.T) {
	sc := &scripted{tokens: []string{"Hi"}}
	srv, _, _ := newChatServer(t, sc, "")
	data, err := os.ReadFile(storiesModel)
	if err != nil {
		t.Fatal(err)
	}
	home := os.Getenv("HOME")
	blob := writeStores(t, home, data)
	lmstudio := filepath.Join(home, ".lmstudio/models/me/tiny/tiny-f32.gguf")

	var list struct{ Data []struct{ ID string } }
	compatCall(t, srv, "GET", "/v1/models", "", &list)
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	// tiny (selected) first; the Hugging Face tiny.gguf has its name.
	if diff := cmp.Diff([]string{"tiny", "stories:260k", "tiny-f32"}, ids); diff != "" {
		t.Errorf("/v1/models ids (-want +got):\n%s", diff)
	}
	var tags struct {
		Models []struct {
			Name, Digest string
			Size         int64
			Details      struct {
				Family            string
				ParameterSize     string `json:"parameter_size"`
				QuantizationLevel string `json:"quantization_level"`
			}
		}
	}
	compatCall(t, srv, "GET", "/api/tags", "", &tags)
	if len(tags.Models) != 3 {
		t.Fatalf("/api/tags = %+v, want 3 models", tags)
	}
	st := tags.Models[1]
	if st.Name != "stories:260k" || st.Size != int64(len(data)) || len(st.Digest) != 64 ||
		st.Details.Family != "llama" || st.Details.QuantizationLevel != "F32" || !strings.HasSuffix(st.Details.ParameterSize, "K") {
		t.Errorf("/api/tags stories:260k = %+v, want llama F32, %d bytes, a digest and a size in K", st, len(data))
	}

	for _, tc := range []struct{ path, body, wantModel, wantPath string }{
		{"/api/chat", `{"model":"registry.ollama.ai/library/stories:260K","stream":false,"messages":[{"role":"user","content":"Hi"}]}`, "stories:260k", blob},
		{"/api/generate", `{"model":"stories:260k","prompt":"Once","stream":false}`, "stories:260k", blob},
		{"/v1/chat/completions", `{"model":"tiny-f32.gguf","messages":[{"role":"user","content":"Hi"}]}`, "tiny-f32", lmstudio},
		{"/v1/messages", `{"model":"tiny-f32","max_tokens":1,"messages":[{"role":"user","content":"Hi"}]}`, "tiny-f32", lmstudio},
		{"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"Hi"}]}`, "tiny", ""},
	} {
		var got struct{ Model string }
		if res := compatCall(t, srv, "POST", tc.path, tc.body, &got); res.StatusCode != 200 || got.Model != tc.wantModel {
			t.Errorf("%s %s: HTTP %d, model %q; want 200 and %q", tc.path, tc.body, res.StatusCode, got.Model, tc.wantModel)
		}
		if p := sc.got[len(sc.got)-1].ModelPath; p != tc.wantPath {
			t.Errorf("%s %s ran model path %q, want %q", tc.path, tc.body, p, tc.wantPath)
		}
	}

	var show struct {
		Details   struct{ Family string }
		ModelInfo map[string]any `json:"model_info"`
	}
	if res := compatCall(t, srv, "POST", "/api/show", `{"model":"stories:260k"}`, &show); res.StatusCode != 200 {
		t.Fatalf("/api/show: HTTP %d", res.StatusCode)
	}
	mi := show.ModelInfo
	if show.Details.Family != "llama" || mi["general.architecture"] != "llama" || mi["llama.context_length"] == nil ||
		mi["general.parameter_count"] == nil || !cmp.Equal(mi["tokenizer.ggml.tokens"], []any{}) {
		t.Errorf("/api/show = %+v, want llama with its context length, parameter count and no token list", show)
	}

	// The last chat ran the selected model; one on stories:260k loads it.
	compatCall(t, srv, "POST", "/api/generate", `{"model":"stories:260k","prompt":"Once","stream":false}`, nil)
	var ps struct {
		Models []struct {
			Name          string
			ContextLength int `json:"context_length"`
		}
	}
	compatCall(t, srv, "GET", "/api/ps", "", &ps)
	if len(ps.Models) != 1 || ps.Models[0].Name != "stories:260k" || ps.Models[0].ContextLength != 4096 {
		t.Errorf("/api/ps = %+v, want stories:260k at 4096 tokens", ps)
	}
}

// TestCompatMaxTokensCapped: a max_tokens (num_predict) beyond the context
// runs with the context's size and the answer says so in
// MaxTokensCappedHeader; Anthropic's stop_reason tells a reply the full
// context cut. One within the context is left alone.
func TestCompatMaxTokensCapped(t *testing.T) {
	sc := &scripted{tokens: []string{"Hi"}}
	srv, _, _ := newChatServer(t, sc, "")
	for _, tc := range []struct {
		path, body string
		want       int
		header     string
	}{
		{"/v1/chat/completions", `{"model":"tiny","max_tokens":100000,"messages":[{"role":"user","content":"Hi"}]}`, 4096, "4096"},
		{"/v1/chat/completions", `{"model":"tiny","max_completion_tokens":100000,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`, 4096, "4096"},
		{"/v1/completions", `{"model":"tiny","max_tokens":5000,"prompt":"Once"}`, 4096, "4096"},
		{"/api/chat", `{"model":"tiny","options":{"num_ctx":512,"num_predict":1000},"messages":[{"role":"user","content":"Hi"}]}`, 512, "512"},
		{"/v1/chat/completions", `{"model":"tiny","max_tokens":10,"messages":[{"role":"user","content":"Hi"}]}`, 10, ""},
	} {
		res := compatCall(t, srv, "POST", tc.path, tc.body, nil)
		if got := sc.got[len(sc.got)-1].MaxTokens; res.StatusCode != 200 || got != tc.want || res.Header.Get(MaxTokensCappedHeader) != tc.header {
			t.Errorf("%s %s: HTTP %d, ran with max_tokens %d, %s %q; want %d and %q",
				tc.path, tc.body, res.StatusCode, got, MaxTokensCappedHeader, res.Header.Get(MaxTokensCappedHeader), tc.want, tc.header)
		}
	}
	var msg struct {
		StopReason string `json:"stop_reason"`
	}
	res := compatCall(t, srv, "POST", "/v1/messages", `{"model":"tiny","max_tokens":64000,"messages":[{"role":"user","content":"Hi"}]}`, &msg)
	if res.Header.Get(MaxTokensCappedHeader) != "4096" || msg.StopReason != "model_context_window_exceeded" {
		t.Errorf("anthropic with max_tokens 64000: %s %q, stop_reason %q; want 4096 and model_context_window_exceeded",
			MaxTokensCappedHeader, res.Header.Get(MaxTokensCappedHeader), msg.StopReason)
	}
}

// TestModelNames: which names count as one model.
func TestModelNames(t *testing.T) {
	m := compatModel{aliases: []string{"sha256-ab"}}
	m.Name, m.Path = "llama3.2:latest", "/o/blobs/sha256-ab"
	for _, asked := range []string{"llama3.2", "llama3.2:latest", "Llama3.2", "library/llama3.2", "registry.ollama.ai/library/llama3.2:latest", "sha256-ab"} {
		if !m.answers(asked) {
			t.Errorf("%q does not answer to %q", m.Name, asked)
		}
	}
	for _, asked := range []string{"", "llama3.2:1b", "llama3", "other/llama3.2"} {
		if m.answers(asked) {
			t.Errorf("%q answers to %q", m.Name, asked)
		}
	}
	f := compatModel{}
	f.Name, f.Path = "Qwen2.5-0.5B-Q4_K_M", "/models/Qwen2.5-0.5B-Q4_K_M.gguf"
	for _, asked := range []string{"Qwen2.5-0.5B-Q4_K_M", "qwen2.5-0.5b-q4_k_m.gguf", "Qwen2.5-0.5B-Q4_K_M.gguf"} {
		if !f.answers(asked) {
			t.Errorf("%q does not answer to %q", f.Name, asked)
		}
	}
	if f.answers("Qwen2.5-0.5B") {
		t.Errorf("%q answers to a prefix of its name", f.Name)
	}
}
