package api

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"homering/app/agent"
	"homering/app/api/anthropic"
	"homering/app/api/apitype"
	"homering/app/api/ollama"
	"homering/app/api/openai"
	"homering/app/problem"
)

// Chatter runs generations for the chat endpoints: the agent's (app/agent
// Chatter, which the agent is); tests may wire anything that streams.
type Chatter = agent.Chatter

// backend is the Chatter wired in, without the agent's MeasuredChat that
// registerUI puts it under, for the optional interfaces it implements
// (RingReporter, SettingsWatcher).
func (s *Server) backend() Chatter {
	if mc, ok := s.Chat.(*agent.MeasuredChat); ok {
		return mc.Chatter
	}
	return s.Chat
}

// ErrNoChat answers chat requests on an agent built without a Chatter.
var ErrNoChat = problem.New(problem.NoChat, "Chat is not available in this agent; start it with `homering headless --model FILE.gguf` or the app.")

// kindStatus is the HTTP status of a problem's kind: services say which
// problem happened (app/problem), only this layer speaks HTTP.
func kindStatus(k problem.Kind) int {
	switch k {
	case problem.KindRequest:
		return http.StatusBadRequest
	case problem.KindUnavailable:
		return http.StatusServiceUnavailable
	case problem.KindUnusable:
		return http.StatusUnprocessableEntity
	case problem.KindNotFound:
		return http.StatusNotFound
	case problem.KindConflict:
		return http.StatusConflict
	case problem.KindDenied:
		return http.StatusForbidden
	case problem.KindPeer:
		return http.StatusBadGateway
	}
	return http.StatusInternalServerError
}

func chatFailure(err error) (int, string) {
	var pe *problem.Error
	if errors.As(err, &pe) {
		return kindStatus(problem.KindOf(pe)), pe.Text
	}
	for _, bad := range []error{openai.ErrRequest, anthropic.ErrRequest, ollama.ErrRequest} {
		if errors.Is(err, bad) {
			s := err.Error()
			s = s[strings.Index(s, ": ")+2:]
			s = strings.TrimPrefix(s, "invalid request: ")
			return http.StatusBadRequest, sentence(errors.New(s))
		}
	}
	return http.StatusInternalServerError, sentence(err)
}

// registerChat adds POST /api/v1/chat and /api/v1/chat/stop (behind the
// token) to m.
func (s *Server) registerChat(m *http.ServeMux) {
	m.HandleFunc("POST /api/v1/chat", s.chat)
	m.HandleFunc("GET /api/v1/chat/active", func(w http.ResponseWriter, r *http.Request) {
		a := apitype.ChatActive{Models: s.served()}
		if s.Chat != nil {
			a.Running = s.Chat.Running()
		}
		reply(w, a, nil)
	})
	m.HandleFunc("POST /api/v1/chat/stop", func(w http.ResponseWriter, r *http.Request) {
		var req apitype.ChatStopRequest
		if decode(w, r, &req) {
			n := 0
			if s.Chat != nil {
				n = s.Chat.StopChat(req.ConversationID)
			}
			reply(w, apitype.ChatStopped{Stopped: n}, nil)
		}
	})
}

func (s *Server) chatter() (Chatter, error) {
	if s.Chat == nil {
		return nil, ErrNoChat
	}
	return s.Chat, nil
}

// sseWriter writes server-sent events and flushes each.
type sseWriter struct {
	w       http.ResponseWriter
	fl      http.Flusher
	started bool
}

func newSSE(w http.ResponseWriter) *sseWriter {
	fl, _ := w.(http.Flusher)
	return &sseWriter{w: w, fl: fl}
}

func (e *sseWriter) start() {
	if !e.started {
		e.started = true
		e.w.Header().Set("Content-Type", "text/event-stream")
		e.w.Header().Set("Cache-Control", "no-store")
		e.w.Header().Set("X-Accel-Buffering", "no")
		e.w.WriteHeader(http.StatusOK)
	}
}

// send writes one event; an empty name writes a data-only event.
func (e *sseWriter) send(name string, v any) error {
	e.start()
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if name != "" {
		if _, err := fmt.Fprintf(e.w, "event: %s\n", name); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(e.w, "data: %s\n\n", b); err != nil {
		return err
	}
	if e.fl != nil {
		e.fl.Flush()
	}
	return nil
}

func (e *sseWriter) raw(line string) error {
	e.start()
	if _, err := fmt.Fprintf(e.w, "data: %s\n\n", line); err != nil {
		return err
	}
	if e.fl != nil {
		e.fl.Flush()
	}
	return nil
}

// chat is POST /api/v1/chat: always a server-sent event stream of `token`
// events, then `done` or `error`.
func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req apitype.ChatRequest
	if !decode(w, r, &req) {
		return
	}
	ev := newSSE(w)
	_, err := s.chatter()
	if err == nil {
		ev.start() // the UI sees the stream open before the model loads
		var st apitype.ChatStats
		st, _, err = s.runTools(r.Context(), req, replyParse{think: s.uiThinkParser(req)},
			func(text string) error { return ev.send("token", apitype.ChatToken{Text: text}) },
			func(text string) error { return ev.send("token", apitype.ChatToken{Thinking: text}) })
		if err == nil {
			_ = ev.send("done", apitype.ChatDone{Stats: st})
			return
		}
	}
	if r.Context().Err() != nil {
		return // the client went away
	}
	_, text := chatFailure(err)
	s.Log.Warn("chat failed", "err", err)
	e := apitype.Error{Error: text}
	var pe *problem.Error
	if errors.As(err, &pe) {
		e.Code = string(pe.Code) // the UI puts a message too long for the context back to edit (context_full)
	}
	_ = ev.send("error", e)
}

// uiThinkParser splits the thinking off a reply to the UI's chat (nil
// when the model's template has none, or for a raw prompt): the model
// the request names, by path or name, else the selected one.
func (s *Server) uiThinkParser(req apitype.ChatRequest) *agent.ThinkParser {
	if req.Prompt != "" && len(req.Messages) == 0 {
		return nil
	}
	path := req.ModelPath
	if path == "" {
		if m, ok := s.findModel(req.Model); ok {
			path = m.Path
		}
	}
	return agent.NewThinkParser(path, req.Think)
}

// registerCompat wraps next (the token-protected API and UI) with the
// OpenAI-, Anthropic- and Ollama-compatible endpoints (compatRouter), which
// local clients call without our token (see compatAuth). Every path of
// their namespaces (/v1, and /api outside /api/v1) is theirs, known or
// not, so that an unknown one is their 404, never our token's 401.
func (s *Server) registerCompat(next http.Handler) http.Handler {
	compat := s.compatAuth(s.compatRouter())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if compatAPIOf(r) != notCompat {
			compat.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) served() []apitype.ServedModel {
	if s.Chat == nil {
		return nil
	}
	return s.Chat.Served()
}

// compatAuth guards the compatible APIs. From loopback they need no key, as
// Ollama's do, but the Host and Origin headers must be local too, so a web
// page cannot reach them through DNS rebinding or a cross-site fetch (our
// per-run token lifts that check, for the desktop window). From any other
// address (only possible when the person exposes the API, and then only on
// the compatible APIs' own port) they need the API key of the settings, as
// "Authorization: Bearer KEY" (OpenAI and Ollama clients) or
// "x-api-key: KEY" (Anthropic clients); the per-run token does not stand in
// for it, since it never leaves this machine. A refusal is a 401 in the
// shape of the API asked, so each SDK shows its own "authentication" error.
func (s *Server) compatAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if msg := s.compatDenied(r); msg != "" {
			compatUnauthorized(w, r, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// compatUnauthorized answers 401 as the API asked does: Anthropic's
// authentication_error, OpenAI's invalid_api_key, Ollama's {"error"}.
func compatUnauthorized(w http.ResponseWriter, r *http.Request, msg string) {
	api := compatAPIOf(r)
	code := ""
	if api == apiOpenAI {
		code = "invalid_api_key"
	}
	compatError(w, api, http.StatusUnauthorized, msg, code)
}

func (s *Server) compatDenied(r *http.Request) string {
	// Either header may carry the key (an Anthropic client may also send a
	// Bearer header of its own): one that matches is enough.
	bearer, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	keys := []string{bearer, r.Header.Get("x-api-key")}
	sent := func(want string) bool {
		ok := false
		for _, k := range keys {
			ok = ok || (k != "" && subtle.ConstantTimeCompare([]byte(k), []byte(want)) == 1)
		}
		return ok
	}
	if remoteIsLoopback(r.RemoteAddr) {
		if s.Token != "" && sent(s.Token) {
			return ""
		}
		if !hostIsLocal(r.Host) {
			return "Requests to this local API must name it as localhost or 127.0.0.1."
		}
		if o := r.Header.Get("Origin"); o != "" && o != "null" && !originIsLocal(o) {
			return "Web pages from other sites may not call this local API."
		}
		return ""
	}
	want := s.apiKey()
	if want == "" {
		return "This API answers other devices only when Settings share it on the network with an API key."
	}
	if bearer == "" && keys[1] == "" {
		return "Missing API key; send it as \"Authorization: Bearer KEY\" or \"x-api-key: KEY\" (the key is in the Settings of the device that shares the API)."
	}
	if !sent(want) {
		return "Wrong API key; send the one in the Settings of the device that shares the API."
	}
	return ""
}

// apiKey is the key LAN clients must send: the settings' when the API is
// exposed, else none (and they are refused).
func (s *Server) apiKey() string {
	if s.APIKey != nil {
		return s.APIKey()
	}
	st, err := LoadSettings(s.Agent.Status().ConfigDir)
	if err != nil || !st.Expose {
		return ""
	}
	return st.APIKey
}

func remoteIsLoopback(remote string) bool {
	ap, err := netip.ParseAddrPort(remote)
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

func hostIsLocal(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.Trim(h, "[]")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.IsLoopback()
}

func originIsLocal(origin string) bool {
	for _, p := range []string{"http://", "https://", "wails://"} {
		if rest, ok := strings.CutPrefix(origin, p); ok {
			return hostIsLocal(rest)
		}
	}
	return false
}

func newID(prefix string) string {
	b := make([]byte, 12)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// compatRequest decodes a compatible API's request body, translates it
// with from and resolves its model (findModel: a model of another name runs
// through ModelPath; an unknown name is the API's own 404), capping its
// max_tokens at the context (capMaxTokens). A request with tools is
// rendered by the model's template family (renderTools) and rp.tools parses its
// reply (nil without tools); a reply to messages (not to a raw prompt) of a
// model whose template reasons apart has its thinking split off by
// rp.think. When any of that fails it answers in api's shape and ok is
// false. req.Model is then the name the answer gives the model.
func compatRequest[T any](s *Server, w http.ResponseWriter, r *http.Request, api compatAPI,
	from func(T) (apitype.ChatRequest, error)) (in T, req apitype.ChatRequest, rp replyParse, ok bool) {
	fail := compatFail(w, api)
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20))
	if err := dec.Decode(&in); err != nil {
		fail(http.StatusBadRequest, "The request body is not valid JSON: "+err.Error()+".")
		return in, req, rp, false
	}
	req, err := from(in)
	if err == nil {
		_, err = s.chatter()
	}
	if err != nil {
		fail(chatFailure(err))
		return in, req, rp, false
	}
	m, found := s.findModel(req.Model)
	if !found {
		modelNotFound(w, api, req.Model)
		return in, req, rp, false
	}
	if m.Name != "" {
		req.Model = m.Name
	}
	if !m.selected && m.Path != "" {
		req.ModelPath = m.Path
	}
	if req.Think != nil && *req.Think && !agent.Thinks(m.Path) {
		// Ollama's answer to think on a model without a reasoning format.
		fail(http.StatusBadRequest, fmt.Sprintf("%q does not support thinking", req.Model))
		return in, req, rp, false
	}
	if req.Prompt == "" {
		rp.think = agent.NewThinkParser(m.Path, req.Think)
		rp.dropThinking = req.Think != nil && !*req.Think
	}
	rp.tools, err = agent.RenderTools(&req, m.Path, m.Name, time.Now())
	if err != nil {
		msg, _ := isToolsError(err)
		fail(http.StatusBadRequest, msg)
		return in, req, rp, false
	}
	s.capMaxTokens(w, &req)
	return in, req, rp, true
}

// run calls the Chatter, or reports why there is none.
func (s *Server) run(ctx context.Context, req apitype.ChatRequest, emit func(string) error) (apitype.ChatStats, error) {
	c, err := s.chatter()
	if err != nil {
		return apitype.ChatStats{}, err
	}
	return c.Chat(ctx, req, emit)
}

// wholeReply is a reply run to its end: its answer, its thinking (when the
// model's template reasons apart) and its calls.
type wholeReply struct {
	text, thinking string
	calls          []apitype.ToolCall
	st             apitype.ChatStats
}

// runWhole runs req to its end for an answer that is not streamed (its
// reply split by rp); when it fails it answers in api's shape
// (compatChatFail) and ok is false.
func (s *Server) runWhole(ctx context.Context, req apitype.ChatRequest, rp replyParse, w http.ResponseWriter, api compatAPI) (wr wholeReply, ok bool) {
	var b, th strings.Builder
	st, calls, err := s.runTools(ctx, req, rp,
		func(t string) error { b.WriteString(t); return nil },
		func(t string) error { th.WriteString(t); return nil })
	if err != nil {
		compatChatFail(w, api, err)
		return wholeReply{}, false
	}
	return wholeReply{text: b.String(), thinking: th.String(), calls: calls, st: st}, true
}

// openaiReply is what differs between /v1/chat/completions and
// /v1/completions: the shape of the whole reply, of a streamed piece, of
// the calls a streamed reply made (chat only) and of the closing chunk
// that carries the usage.
type openaiReply struct {
	whole func(wr wholeReply) any
	piece func(text, thinking string) any
	calls func(calls []apitype.ToolCall) []any
	final func(st apitype.ChatStats, calls []apitype.ToolCall) any
}

// serveOpenAI runs one OpenAI-style request, whole or as SSE ending in [DONE],
// its reply split by rp. An error after the stream started is sent as an
// error chunk, since the status line is gone by then.
func (s *Server) serveOpenAI(w http.ResponseWriter, r *http.Request, req apitype.ChatRequest, rp replyParse, stream bool, reply openaiReply) {
	if !stream {
		if wr, ok := s.runWhole(r.Context(), req, rp, w, apiOpenAI); ok {
			writeJSON(w, http.StatusOK, reply.whole(wr))
		}
		return
	}
	ev := newSSE(w)
	st, calls, err := s.runTools(r.Context(), req, rp,
		func(t string) error { return ev.send("", reply.piece(t, "")) },
		func(t string) error { return ev.send("", reply.piece("", t)) })
	if err != nil {
		if !ev.started {
			compatChatFail(w, apiOpenAI, err)
			return
		}
		_, msg := chatFailure(err)
		_ = ev.send("", openai.NewError("server_error", msg))
		return
	}
	if len(calls) > 0 {
		for _, c := range reply.calls(calls) {
			_ = ev.send("", c)
		}
	}
	_ = ev.send("", reply.final(st, calls))
	_ = ev.raw("[DONE]")
}

func (s *Server) openaiChat(w http.ResponseWriter, r *http.Request) {
	in, req, rp, ok := compatRequest(s, w, r, apiOpenAI, openai.FromChat)
	if !ok {
		return
	}
	id, created, model := newID("chatcmpl-"), time.Now().Unix(), req.Model
	first := true
	s.serveOpenAI(w, r, req, rp, in.Stream, openaiReply{
		whole: func(wr wholeReply) any {
			c := openai.NewChatCompletion(id, model, created, wr.text, wr.calls, wr.st)
			c.Choices[0].Message.ReasoningContent = wr.thinking
			return c
		},
		piece: func(t, thinking string) any {
			c := openai.NewChunk(id, model, created, t, first)
			c.Choices[0].Delta.ReasoningContent = thinking
			first = false
			return c
		},
		calls: func(calls []apitype.ToolCall) []any {
			var out []any
			for _, c := range openai.NewToolCallsChunks(id, model, created, calls, first) {
				out = append(out, c)
			}
			first = first && len(out) == 0
			return out
		},
		final: func(st apitype.ChatStats, calls []apitype.ToolCall) any {
			return openai.NewFinalChunk(id, model, created, st, calls, in.StreamOptions != nil && in.StreamOptions.IncludeUsage)
		},
	})
}

func (s *Server) openaiCompletion(w http.ResponseWriter, r *http.Request) {
	in, req, _, ok := compatRequest(s, w, r, apiOpenAI, openai.FromCompletion)
	if !ok {
		return
	}
	id, created, model := newID("cmpl-"), time.Now().Unix(), req.Model
	s.serveOpenAI(w, r, req, replyParse{}, in.Stream, openaiReply{
		whole: func(wr wholeReply) any {
			return openai.NewCompletion(id, model, created, wr.text, &wr.st)
		},
		piece: func(t, _ string) any { return openai.NewCompletion(id, model, created, t, nil) },
		final: func(st apitype.ChatStats, _ []apitype.ToolCall) any {
			return openai.NewCompletion(id, model, created, "", &st)
		},
	})
}

func (s *Server) anthropicMessages(w http.ResponseWriter, r *http.Request) {
	in, req, rp, ok := compatRequest(s, w, r, apiAnthropic, anthropic.FromMessages)
	if !ok {
		return
	}
	id, model := newID("msg_"), req.Model
	// The thinking is split off the answer and not sent: Anthropic's
	// thinking blocks carry a signature the API checks when a client sends
	// them back, which a local model cannot give.
	if !in.Stream {
		if wr, ok := s.runWhole(r.Context(), req, rp, w, apiAnthropic); ok {
			writeJSON(w, http.StatusOK, anthropic.NewResponse(id, model, wr.text, wr.calls, wr.st, req.MaxTokens))
		}
		return
	}
	ev := newSSE(w)
	sendAll := func(evs []anthropic.Event) {
		for _, e := range evs {
			_ = ev.send(e.Name, e.Data)
		}
	}
	sendAll(anthropic.Start(id, model, 0))
	st, calls, err := s.runTools(r.Context(), req, rp, func(t string) error {
		d := anthropic.Delta(t)
		return ev.send(d.Name, d.Data)
	}, nil)
	if err != nil {
		_, msg := chatFailure(err)
		_ = ev.send("error", anthropic.NewError("api_error", msg))
		return
	}
	sendAll(anthropic.Stop(st, calls, req.MaxTokens))
}

// ndjson writes newline-delimited JSON objects and flushes each.
func ndjson(w http.ResponseWriter) func(v any) error {
	fl, _ := w.(http.Flusher)
	started := false
	enc := json.NewEncoder(w)
	return func(v any) error {
		if !started {
			started = true
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
		}
		if err := enc.Encode(v); err != nil {
			return err
		}
		if fl != nil {
			fl.Flush()
		}
		return nil
	}
}

func (s *Server) ollamaChat(w http.ResponseWriter, r *http.Request) {
	in, req, rp, ok := compatRequest(s, w, r, apiOllama, ollama.FromChat)
	if !ok {
		return
	}
	// Ollama leaves out the oldest messages of a chat that outgrows the
	// context (the system prompt and the last message kept) and answers:
	// its clients expect that, not an error. OpenAI's and Anthropic's get
	// their API's error, as those services answer. (A request with tools
	// is one rendered prompt: it is not trimmed.)
	req.FitContext = true
	s.ollamaRun(w, r, req, rp, ollama.Streams(in.Stream), req.Model,
		func(m string, t, thinking string, calls []apitype.ToolCall) any {
			p := ollama.ChatPiece(m, time.Now(), t)
			p.Message.Thinking = thinking
			p.Message.ToolCalls = ollama.ToolCalls(calls)
			return p
		},
		func(m string, wr wholeReply) any {
			d := ollama.ChatDone(m, time.Now(), wr.text, wr.st)
			d.Message.Thinking = wr.thinking
			d.Message.ToolCalls = ollama.ToolCalls(wr.calls)
			return d
		})
}

func (s *Server) ollamaGenerate(w http.ResponseWriter, r *http.Request) {
	in, req, rp, ok := compatRequest(s, w, r, apiOllama, ollama.FromGenerate)
	if !ok {
		return
	}
	s.ollamaRun(w, r, req, rp, ollama.Streams(in.Stream), req.Model,
		func(m string, t, thinking string, _ []apitype.ToolCall) any {
			p := ollama.GeneratePiece(m, time.Now(), t)
			p.Thinking = thinking
			return p
		},
		func(m string, wr wholeReply) any {
			d := ollama.GenerateDone(m, time.Now(), wr.text, wr.st)
			d.Thinking = wr.thinking
			return d
		})
}

// ollamaRun answers an Ollama request whole or as NDJSON: piece is a
// streamed object (of text, of thinking, or of the reply's calls, sent
// whole before the last object, as Ollama sends them), done the last one
// (the whole reply when not streaming; only the stats when streaming).
func (s *Server) ollamaRun(w http.ResponseWriter, r *http.Request, req apitype.ChatRequest, rp replyParse, stream bool, model string,
	piece func(model, text, thinking string, calls []apitype.ToolCall) any, done func(string, wholeReply) any) {
	if !stream {
		if wr, ok := s.runWhole(r.Context(), req, rp, w, apiOllama); ok {
			writeJSON(w, http.StatusOK, done(model, wr))
		}
		return
	}
	send := ndjson(w)
	sent := false
	st, calls, err := s.runTools(r.Context(), req, rp,
		func(t string) error { sent = true; return send(piece(model, t, "", nil)) },
		func(t string) error { sent = true; return send(piece(model, "", t, nil)) })
	if err != nil {
		if !sent {
			// Nothing streamed yet (a format the engine cannot follow, a
			// prompt it refuses): the status line can still say so.
			compatChatFail(w, apiOllama, err)
			return
		}
		_, msg := chatFailure(err)
		_ = send(ollama.ErrorBody{Error: msg})
		return
	}
	if len(calls) > 0 {
		_ = send(piece(model, "", "", calls))
	}
	_ = send(done(model, wholeReply{st: st}))
}
