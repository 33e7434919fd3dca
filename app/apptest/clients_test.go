//go:build linux

package apptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"homering/app/api/apitype"
	"homering/engine/modelgen"
)

// stories260K is the real (trained) test model.
var stories260K, _ = filepath.Abs("../../../shared/models/stories260K.gguf")

// llama3ToolTemplate is a chat template with the markers of Llama
// 3.1-3.3's (engine/chat.ToolTemplateOf: <|start_header_id|>, the ipython
// role, tool_calls), which llama.cpp reads as its llama3 template too.
const llama3ToolTemplate = `{{- bos_token }}{%- set date_string = "26 Jul 2024" %}{%- for message in messages %}` +
	`{%- if message.role == 'ipython' or message.role == 'tool' %}{{- '<|start_header_id|>ipython<|end_header_id|>\n\n' + message.content + '<|eot_id|>' }}` +
	`{%- elif 'tool_calls' in message %}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n{"name": "' + message.tool_calls[0].function.name + '", "parameters": ' + message.tool_calls[0].function.arguments | tojson + '}<|eot_id|>' }}` +
	`{%- else %}{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}{%- endif %}{%- endfor %}` +
	`{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{%- endif %}`

// chatNode starts an agent whose settings select stories260K, with a copy
// of it, second-story.gguf, in its model folder (a second model the
// compatible APIs list and load when asked for by name), and tool-llama.gguf,
// a small generated model with llama3ToolTemplate (tool calling).
func chatNode(t *testing.T, e *Env, name string) (*Node, apitype.Info) {
	t.Helper()
	n := e.NewNode(t, name)
	models := t.TempDir()
	b, err := os.ReadFile(stories260K)
	if err == nil {
		err = os.WriteFile(filepath.Join(models, "second-story.gguf"), b, 0o644)
	}
	if err == nil {
		err = modelgen.Generate(filepath.Join(models, "tool-llama.gguf"), modelgen.Config{Arch: "llama", Layers: 2, Embd: 64, FF: 128, Heads: 4,
			Vocab: 4000, Ctx: 1024, Seed: 18, ChatTemplate: llama3ToolTemplate})
	}
	if err != nil {
		t.Fatal(err)
	}
	settings := fmt.Sprintf(`{"model": %q, "model_dir": %q, "context_tokens": 1024}`, stories260K, models)
	if err := os.WriteFile(filepath.Join(n.Home, "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	n.Start(t)
	return n, n.Info(t)
}

// inNS runs a command in the node's namespace, where its loopback API is.
func (n *Node) inNS(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.NS, name}, args...)...)
}

// TestAPIClients streams completions from a running agent on stories260K
// with the official openai, @anthropic-ai/sdk and ollama npm packages (and
// curl where a check needs the raw request), including their errors for an
// unknown model or path, a second model loaded by name, the model lists,
// Ollama's version, show and ps, and a max_tokens beyond the context.
func TestAPIClients(t *testing.T) {
	e := NewEnv(t)
	n, info := chatNode(t, e, "head")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The SDKs and curl use the documented fixed address (each node has a
	// network namespace, hence a loopback, of its own), as people do.
	api := "http://127.0.0.1:47471"
	if out := n.MustCLI(t, "status"); !strings.Contains(out, "chat API "+api+" (OpenAI clients: base URL "+api+"/v1;") {
		t.Errorf("homering status does not print the chat API's address %s:\n%s", api, out)
	}
	start := time.Now()
	out, err := n.inNS(ctx, "node", "clients/clients.mjs", api, info.Token).CombinedOutput()
	if err != nil {
		t.Fatalf("node clients.mjs: %v\n%s\nagent log:\n%s", err, out, n.Log())
	}
	t.Logf("SDK checks took %s", time.Since(start).Round(time.Millisecond))
	got := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("clients.mjs printed %q: %v", line, err)
		}
		got[m["check"].(string)] = m
		t.Logf("%s", line)
	}
	num := func(check, key string) float64 { v, _ := got[check][key].(float64); return v }
	str := func(check, key string) string { v, _ := got[check][key].(string); return v }

	if c := num("openai.chat.stream", "chunks"); c < 2 || str("openai.chat.stream", "text") == "" {
		t.Errorf("openai stream: %v chunks, text %q; want a streamed reply", c, str("openai.chat.stream", "text"))
	}
	if f := str("openai.chat.stream", "finish"); f != "length" && f != "stop" {
		t.Errorf("openai stream finish_reason %q", f)
	}
	if u, _ := got["openai.chat.stream"]["usage"].(map[string]any); u == nil || u["completion_tokens"].(float64) < 1 {
		t.Errorf("openai stream usage %v", got["openai.chat.stream"]["usage"])
	}
	if str("openai.chat", "text") == "" {
		t.Errorf("openai non-streamed reply is empty: %v", got["openai.chat"])
	}
	if num("openai.completions.stream", "chunks") < 2 {
		t.Errorf("openai completions stream: %v", got["openai.completions.stream"])
	}
	// The selected model first, then the model folder's.
	for _, check := range []string{"openai.models", "anthropic.models"} {
		if ids, _ := got[check]["ids"].([]any); len(ids) < 2 || ids[0] != "stories260K" || !slices.Contains(ids, any("second-story")) {
			t.Errorf("%s: %v, want stories260K first, then second-story", check, got[check])
		}
	}
	evs, _ := got["anthropic.stream"]["events"].([]any)
	var seq []string
	for _, e := range evs {
		if s := e.(string); len(seq) == 0 || seq[len(seq)-1] != s {
			seq = append(seq, s)
		}
	}
	wantSeq := []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if strings.Join(seq, ",") != strings.Join(wantSeq, ",") {
		t.Errorf("anthropic event sequence %v, want %v", seq, wantSeq)
	}
	if str("anthropic.stream", "text") == "" || str("anthropic.stream", "text") != str("anthropic.stream", "final_text") {
		t.Errorf("anthropic stream text %q, final message %q", str("anthropic.stream", "text"), str("anthropic.stream", "final_text"))
	}
	if str("anthropic.create", "type") != "message" || str("anthropic.create", "text") == "" {
		t.Errorf("anthropic create: %v", got["anthropic.create"])
	}

	// An unknown model or path is each client's own not-found error.
	for check, want := range map[string]struct{ name, field, value string }{
		"openai.unknown_model":    {"NotFoundError", "code", "model_not_found"},
		"openai.unknown_path":     {"NotFoundError", "", ""},
		"anthropic.unknown_model": {"NotFoundError", "type", "not_found_error"},
		"ollama.unknown_model":    {"ResponseError", "", ""},
		"ollama.unknown_path":     {"ResponseError", "", ""},
	} {
		if num(check, "status") != 404 || str(check, "name") != want.name || (want.field != "" && str(check, want.field) != want.value) {
			t.Errorf("%s: %v, want a 404 %s with %s %q", check, got[check], want.name, want.field, want.value)
		}
	}
	if m := str("ollama.unknown_model", "message"); !strings.HasPrefix(m, "model 'llama3.2:1b' not found") {
		t.Errorf("ollama unknown model message %q, want Ollama's \"model 'llama3.2:1b' not found\"", m)
	}

	// A model named other than the selected one loads and answers as itself.
	if str("openai.models.retrieve", "id") != "second-story" || str("openai.other_model", "model") != "second-story" ||
		str("ollama.generate.other_model", "model") != "second-story" {
		t.Errorf("second model: retrieve %v, openai %v, ollama %v", got["openai.models.retrieve"], got["openai.other_model"], got["ollama.generate.other_model"])
	}

	// max_tokens beyond the 1024-token context (room for a Llama 3 tool prompt): run to the context, said so.
	for check, reasons := range map[string][]string{
		"openai.capped":    {"length", "stop"},
		"anthropic.capped": {"model_context_window_exceeded", "end_turn"},
		"ollama.capped":    {"length", "stop"},
	} {
		reason := str(check, "finish") + str(check, "stop_reason") + str(check, "done_reason")
		if str(check, "header") != "1024" || !slices.Contains(reasons, reason) {
			t.Errorf("%s: %v, want header x-homering-max-tokens-capped 1024 and an end in %v", check, got[check], reasons)
		}
	}

	// Ollama's client: version, list, show, a stream, ps.
	if v := str("ollama.version", "version"); v != "0.17.4" {
		t.Errorf("ollama version %q, want the pinned module's 0.17.4", v)
	}
	if names, _ := got["ollama.list"]["names"].([]any); len(names) < 2 || names[0] != "stories260K" || !slices.Contains(names, any("second-story")) {
		t.Errorf("ollama list: %v", got["ollama.list"])
	}
	if d, _ := got["ollama.show"]["details"].(map[string]any); d["family"] != "llama" || str("ollama.show", "arch") != "llama" || num("ollama.show", "context_length") <= 0 {
		t.Errorf("ollama show: %v", got["ollama.show"])
	}
	if num("ollama.chat.stream", "parts") != 7 || num("ollama.chat.stream", "eval_count") != 6 || got["ollama.chat.stream"]["done"] != true {
		t.Errorf("ollama chat stream: %v, want 6 tokens then the final object", got["ollama.chat.stream"])
	}
	// ps: the model that answered last (the capped generate ran after ps).
	if ms, _ := got["ollama.ps"]["models"].([]any); len(ms) != 1 || ms[0].(map[string]any)["name"] != "second-story" || ms[0].(map[string]any)["context_length"] != 1024.0 {
		t.Errorf("ollama ps: %v, want second-story at 1024 tokens", got["ollama.ps"])
	}

	// Structured output through each client: JSON of the schema, ended by
	// the model once complete; a schema llama.cpp cannot use is a 400.
	for _, check := range []string{"openai.json_schema", "openai.json_schema.stream", "ollama.format_schema", "ollama.format_schema.stream"} {
		if err := checkMood(str(check, "text")); err != nil || str(check, "finish")+str(check, "done_reason") != "stop" {
			t.Errorf("%s: %v; want moodSchema's JSON (%v), ended with stop", check, got[check], err)
		}
	}
	for check, name := range map[string]string{"openai.bad_schema": "BadRequestError", "ollama.bad_schema": "ResponseError"} {
		if num(check, "status") != 400 || str(check, "name") != name || !strings.Contains(str(check, "message"), "The JSON schema cannot be turned into a grammar;") {
			t.Errorf("%s: %v, want a 400 %s saying the schema cannot be turned into a grammar", check, got[check], name)
		}
	}

	// Tool calling: the call forced by its schema comes back as each
	// client's calls (whole and streamed), goes back with its result, and a
	// model whose template has no tool calling is each API's 400.
	for _, check := range []string{"openai.tools", "openai.tools.stream"} {
		calls, _ := got[check]["calls"].([]any)
		var c map[string]any
		if len(calls) == 1 {
			c, _ = calls[0].(map[string]any)
		}
		if str(check, "finish") != "tool_calls" || c["name"] != "get_weather" || !strings.HasPrefix(fmt.Sprint(c["id"]), "call_") ||
			c["arguments"] != `{"city":"Paris"}` || str(check, "content") != "" {
			t.Errorf("%s: %v; want one get_weather call for Paris, finish_reason tool_calls, no content", check, got[check])
		}
	}
	// tool_choice: "required" and a named function force a call with no
	// response_format; the SDK's stream helper puts a streamed call
	// together from its fragments.
	for check, want := range map[string]string{"openai.tools.required": "", "openai.tools.named": "get_time", "openai.tools.stream_helper": "get_weather"} {
		calls, _ := got[check]["calls"].([]any)
		var c map[string]any
		if len(calls) == 1 {
			c, _ = calls[0].(map[string]any)
		}
		name := fmt.Sprint(c["name"])
		if str(check, "finish") != "tool_calls" || (want != "" && name != want) || (want == "" && name != "get_weather" && name != "get_time") ||
			!strings.HasPrefix(fmt.Sprint(c["id"]), "call_") || c["arguments"] != `{"city":"Paris"}` {
			t.Errorf("%s: %v; want one call (of %q) for Paris, finish_reason tool_calls", check, got[check], want)
		}
	}
	if n := num("openai.tools.stream_helper", "fragments"); n < 3 {
		t.Errorf("the streamed call's arguments came in %v fragments, want them in pieces as OpenAI streams them", n)
	}
	for _, check := range []string{"ollama.tools", "ollama.tools.stream"} {
		calls, _ := got[check]["calls"].([]any)
		if len(calls) != 1 || fmt.Sprint(calls[0].(map[string]any)["name"]) != "get_weather" ||
			fmt.Sprint(calls[0].(map[string]any)["arguments"]) != "map[city:Paris]" || str(check, "content") != "" {
			t.Errorf("%s: %v; want one get_weather call with arguments {city: Paris}, no content", check, got[check])
		}
	}
	if caps := fmt.Sprint(got["ollama.tools.show"]["capabilities"]); caps != "[completion tools]" {
		t.Errorf("ollama show tool-llama: capabilities %s, want [completion tools]", caps)
	}
	if str("openai.tools.result", "object") != "chat.completion" || got["ollama.tools.result"]["done"] != true ||
		str("anthropic.tools.result", "type") != "message" {
		t.Errorf("a call's result sent back: openai %v, ollama %v, anthropic %v", got["openai.tools.result"], got["ollama.tools.result"], got["anthropic.tools.result"])
	}
	for check, name := range map[string]string{"openai.tools.no_template": "BadRequestError", "ollama.tools.no_template": "ResponseError", "anthropic.tools.no_template": "BadRequestError"} {
		if num(check, "status") != 400 || str(check, "name") != name || !strings.Contains(str(check, "message"), "chat template has no tool calling") {
			t.Errorf("%s: %v, want a 400 %s saying the chat template has no tool calling", check, got[check], name)
		}
	}

	// Ollama's probe on the API port answers as Ollama does; the UI is
	// still served on the agent's own address.
	if out, _ := n.inNS(ctx, "curl", "-s", "-w", " %{http_code}", api+"/").Output(); string(out) != "Ollama is running 200" {
		t.Errorf("GET / on the API port: %q, want \"Ollama is running\" 200", out)
	}
	if out, _ := n.inNS(ctx, "curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{content_type}", info.URL+"/").Output(); !strings.HasPrefix(string(out), "200 text/html") {
		t.Errorf("GET / on the agent's address: %q, want the UI's page (200 text/html)", out)
	}

	// On the agent's own address too, an unknown compatible path is that
	// API's 404, not the control API's token refusal.
	out, _ = n.inNS(ctx, "curl", "-s", "-w", " %{http_code}", info.URL+"/v1/embeddings", "-d", `{}`).Output()
	if !strings.HasSuffix(string(out), " 404") || !strings.Contains(string(out), "Invalid URL (POST /v1/embeddings)") {
		t.Errorf("/v1/embeddings on the agent's address: %s, want OpenAI's 404", out)
	}
	// Our own token guards /api/v1 even on loopback; the compatible APIs
	// refuse a foreign Host (DNS rebinding).
	out, _ = n.inNS(ctx, "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", info.URL+"/api/v1/chat", "-d", `{}`).Output()
	if string(out) != "401" {
		t.Errorf("/api/v1/chat without token: HTTP %s, want 401", out)
	}
	out, _ = n.inNS(ctx, "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Host: evil.example", info.URL+"/api/tags").Output()
	if string(out) != "401" {
		t.Errorf("/api/tags with a foreign Host: HTTP %s, want 401", out)
	}
}

// checkMood says what is wrong with text as the JSON of clients.mjs's mood
// schema: an object of a name of at most 12 characters and a mood, happy
// or sad, and nothing else.
func checkMood(text string) error {
	var m struct {
		Name *string `json:"name"`
		Mood string  `json:"mood"`
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return err
	}
	if dec.More() || m.Name == nil || len([]rune(*m.Name)) > 12 || (m.Mood != "happy" && m.Mood != "sad") {
		return fmt.Errorf("%q does not follow the schema", text)
	}
	return nil
}

// TestChatAPIAddress: the compatible APIs keep their address across a
// restart, and a second agent whose port is taken says so in one sentence
// (naming the port and where to change it) and runs on.
func TestChatAPIAddress(t *testing.T) {
	e := NewEnv(t)
	n := e.NewNode(t, "a")
	n.Start(t)
	const want = "chat API http://127.0.0.1:47471 "
	if out := n.MustCLI(t, "status"); !strings.Contains(out, want) {
		t.Errorf("status:\n%s\nwant %q", out, want)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	second := n.inNS(ctx, n.env.Bin, "headless")
	second.Env = append(os.Environ(), "HOMERING_HOME="+t.TempDir())
	var buf lockedBuffer
	second.Stdout, second.Stderr = &buf, &buf
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	const sentence = "homering: Port 47471 of the OpenAI, Anthropic and Ollama compatible APIs is taken by another program; choose another in Settings (API port) or start Homering with --api-port N.\n"
	WaitFor(t, 30*time.Second, "the second agent's sentence", func() error {
		if !strings.Contains(buf.String(), sentence) {
			return fmt.Errorf("output so far:\n%s", buf.String())
		}
		return nil
	})
	if strings.Count(buf.String(), "47471") != 1 || strings.Contains(buf.String(), "bind") {
		t.Errorf("the taken port is said more than once, or with the socket error:\n%s", buf.String())
	}
	_ = second.Process.Signal(syscall.SIGTERM)
	if err := second.Wait(); err != nil {
		t.Errorf("the second agent (port taken) did not run on and stop cleanly: %v\n%s", err, buf.String())
	}

	n.Stop(t)
	n.Start(t)
	if out := n.MustCLI(t, "status"); !strings.Contains(out, want) {
		t.Errorf("after a restart, status:\n%s\nwant %q", out, want)
	}
}

// lockedBuffer is a bytes.Buffer a process writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runnerPID finds the agent's engine child.
func runnerPID(agent int) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so split after ')'.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(agent) {
			return pid
		}
	}
	return 0
}

// TestRunnerAbortMidChat kills the engine child with SIGABRT while a chat
// streams: the chat ends with an error event naming the abort, the agent
// stays up, and the next chat works in a fresh engine process.
func TestRunnerAbortMidChat(t *testing.T) {
	e := NewEnv(t)
	n, info := chatNode(t, e, "abort")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	chat := func(body string) *exec.Cmd {
		return n.inNS(ctx, "curl", "-sSN", info.URL+"/api/v1/chat", "-H", "Authorization: Bearer "+info.Token, "-d", body)
	}
	// A first short chat starts the engine child and loads the model, so
	// that the abort below needs no search for it.
	if out, err := chat(`{"prompt":"Once","max_tokens":1}`).Output(); err != nil || !strings.Contains(string(out), "event: done") {
		t.Fatalf("the first chat: %v\n%s\nagent log:\n%s", err, out, n.Log())
	}
	runner := runnerPID(n.PID())
	if runner == 0 {
		t.Fatal("no runner child of the agent after a chat")
	}
	// Up to 490 tokens of a 512-token context, sampled with a fixed seed:
	// long enough to be killed mid-way.
	cmd := chat(`{"prompt":"Once upon a time","max_tokens":490,"temperature":1,"seed":1}`)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []string
	var pid int     // the engine child aborted at the first token
	var abort error // why it could not be
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			l := sc.Text()
			if strings.HasPrefix(l, "event: ") || strings.HasPrefix(l, "data: {\"error") {
				mu.Lock()
				events = append(events, l)
				mu.Unlock()
			}
			// The abort is sent from here at the first token: stories260K
			// streams hundreds of tokens a second, so a test goroutine
			// polling for the token could abort after the reply's end.
			if l == "event: token" && pid == 0 && abort == nil {
				pid, abort = runner, syscall.Kill(runner, syscall.SIGABRT)
			}
		}
	}()
	<-done         // the context ends curl after 2 minutes
	_ = cmd.Wait() // reaps curl; what it streamed is checked below
	if abort != nil {
		t.Fatal(abort)
	}
	if pid == 0 {
		t.Fatalf("no token streamed before the end of the stream:\n%s", strings.Join(events, "\n"))
	}
	mu.Lock()
	all := strings.Join(events, "\n")
	mu.Unlock()
	if !strings.Contains(all, "event: error") || !strings.Contains(all, "SIGABRT") || strings.Contains(all, "event: done") {
		t.Fatalf("stream after SIGABRT of the engine:\n%s", all)
	}
	t.Logf("problem shown after %d tokens: %s", strings.Count(all, "event: token"), all[strings.LastIndex(all, "data: "):])
	status := func() apitype.Status {
		out, err := n.inNS(ctx, "curl", "-sSf", "-H", "Authorization: Bearer "+info.Token, info.URL+"/api/v1/status").Output()
		if err != nil {
			t.Fatal(err)
		}
		var st apitype.Status
		if err := json.Unmarshal(out, &st); err != nil {
			t.Fatalf("status: %v\n%s", err, out)
		}
		return st
	}
	var engineProblem *apitype.Problem
	for _, p := range status().Problems {
		if p.Code == "engine" {
			engineProblem = &p
		}
	}
	if engineProblem == nil || !strings.Contains(engineProblem.Text, "SIGABRT") || engineProblem.Fix == "" {
		t.Errorf("status problems after the abort: %+v", status().Problems)
	} else {
		t.Logf("status problem: %s %s %s", engineProblem.Title, engineProblem.Text, engineProblem.Fix)
	}

	out, err := chat(`{"messages":[{"role":"user","content":"Hi"}],"max_tokens":5}`).Output()
	if err != nil || !strings.Contains(string(out), "event: done") || !strings.Contains(string(out), "event: token") {
		t.Fatalf("the next chat: %v\n%s\nagent log:\n%s", err, out, n.Log())
	}
	for _, p := range status().Problems {
		if p.Code == "engine" {
			t.Errorf("the engine problem is still shown after a good chat: %+v", p)
		}
	}
	if p := runnerPID(n.PID()); p == 0 || p == pid {
		t.Errorf("runner after the abort: pid %d, killed %d", p, pid)
	}
	if !strings.Contains(n.Log(), "engine process died") {
		t.Errorf("the agent did not log the death:\n%s", n.Log())
	}
}
