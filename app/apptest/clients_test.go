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
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"homering/app/api/apitype"
)

// stories260K is the real (trained) test model.
var stories260K, _ = filepath.Abs("../../../shared/models/stories260K.gguf")

// chatNode starts an agent whose settings select stories260K.
func chatNode(t *testing.T, e *Env, name string) (*Node, apitype.Info) {
	t.Helper()
	n := e.NewNode(t, name)
	settings := fmt.Sprintf(`{"model": %q, "context_tokens": 512}`, stories260K)
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
// with the official openai and @anthropic-ai/sdk npm packages, and with curl
// in Ollama's format.
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
	if ids, _ := got["openai.models"]["ids"].([]any); len(ids) != 1 || ids[0] != "stories260K" {
		t.Errorf("openai models: %v", got["openai.models"])
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

	// Ollama, with curl, streaming NDJSON.
	out, err = n.inNS(ctx, "curl", "-sSN", api+"/api/chat", "-d",
		`{"model":"stories260K","messages":[{"role":"user","content":"Hi"}],"options":{"num_predict":6,"temperature":0}}`).Output()
	if err != nil {
		t.Fatalf("curl /api/chat: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var last struct {
		Done       bool   `json:"done"`
		DoneReason string `json:"done_reason"`
		EvalCount  int    `json:"eval_count"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || !last.Done || last.EvalCount != 6 || len(lines) != 7 {
		t.Errorf("ollama /api/chat: %d lines, last %+v (%v):\n%s", len(lines), last, err, out)
	}
	out, err = n.inNS(ctx, "curl", "-sS", api+"/api/tags").Output()
	if err != nil || !strings.Contains(string(out), `"name":"stories260K"`) {
		t.Errorf("ollama /api/tags: %v %s", err, out)
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
