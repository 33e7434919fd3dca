package ollama

import (
	"encoding/json"
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
		{"chat with a tool role", true, `{"messages":[{"role":"tool","content":"x"}]}`, apitype.ChatRequest{}, true},
		{"generate templated", false, `{"model":"m","prompt":"Why?","system":"Be brief."}`,
			apitype.ChatRequest{Model: "m", System: "Be brief.", Messages: []apitype.ChatMessage{{Role: "user", Content: "Why?"}}}, false},
		{"generate raw", false, `{"prompt":"Once","raw":true}`, apitype.ChatRequest{Prompt: "Once"}, false},
		{"generate empty", false, `{"prompt":""}`, apitype.ChatRequest{}, true},
		{"negative num_ctx", false, `{"prompt":"x","options":{"num_ctx":-5}}`, apitype.ChatRequest{}, true},
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
		{"tags", TagsOf([]apitype.ServedModel{{Name: "s", Size: 3, Modified: 0}}),
			`{"models":[{"name":"s","model":"s","modified_at":"1970-01-01T00:00:00Z","size":3,"digest":"","details":{"format":"gguf","family":""}}]}`},
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
