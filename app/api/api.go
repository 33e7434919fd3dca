package api

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"time"

	"homering/app/agent"
	"homering/app/api/apitype"
	"homering/app/problem"
)

// Server is the loopback control API of one agent.
type Server struct {
	// Agent is the agent served (app/agent): this device and its peers,
	// the plans, the progress bars. Non-nil.
	Agent *agent.Agent
	Log   *slog.Logger // non-nil
	Token string       // non-empty; required on every request
	Chat  Chatter      // nil: the chat endpoints answer 503 (app/api/chat.go); the agent passes itself
	// APIKey returns the key LAN clients of the compatible APIs must send;
	// nil: read from the settings (chat.go compatAuth).
	APIKey func() string
	// ChatAPI is the base URL of the compatible APIs' own listener
	// (ChatAPIHandler on the API port), shown in the Status; "" when it
	// could not listen, and then ChatAPIProblem says why.
	ChatAPI        string
	ChatAPIProblem *apitype.Problem
	// ChatListener, when set, is that listener as the agent runs it: it
	// stands for ChatAPI and ChatAPIProblem, and a saved change of sharing
	// (Expose, APIKey) rebinds it at once.
	ChatListener ChatListener

	catalog modelCatalog // the compatible APIs' models (compat_models.go)
}

// ChatListener is the compatible APIs' own listener (app's chatListener).
type ChatListener interface {
	// State is the base URL for clients on this computer, or "" and the
	// problem that says why it does not listen (or cannot share).
	State() (url string, pr *apitype.Problem)
	// SetExpose listens on the network too (on) or on loopback alone (off),
	// and returns once the new socket is open.
	SetExpose(on bool)
	// Shared is whether it listens on the network now.
	Shared() bool
}

// sharesAPI is whether settings s share the compatible APIs on the network:
// Expose with a key (Validate requires one; a hand-edited file may lack it).
func sharesAPI(s apitype.Settings) bool { return s.Expose && s.APIKey != "" }

// status is the agent's Status with what only the API server knows: where
// the compatible APIs listen, or why they do not.
func (s *Server) status() apitype.Status {
	st := s.Agent.Status()
	url, pr := s.ChatAPI, s.ChatAPIProblem
	if s.ChatListener != nil {
		url, pr = s.ChatListener.State()
		st.ChatAPIShared = url != "" && s.ChatListener.Shared()
	}
	st.ChatAPI = url
	st.Goroutines = runtime.NumGoroutine()
	if pr != nil {
		st.Problems = append(slices.Clip(st.Problems), *pr) // never into the agent's array
	}
	return st
}

// ChatAPIHandler serves the compatible APIs alone, for their fixed port
// (config.DefaultAPIPort): the control API, the UI and their token stay on
// the agent's own address. GET / answers "Ollama is running", as Ollama
// does: Ollama's clients and the apps built on them probe it before they
// use the API (it tells nothing, so it needs no key). Any other path is
// 404 (compatRouter answers those under /v1 and /api in the shape of
// their API).
func (s *Server) ChatAPIHandler() http.Handler {
	return s.registerCompat(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(w, "Ollama is running")
			return
		}
		writeJSON(w, http.StatusNotFound, apitype.Error{Error: "Not found: this port serves the OpenAI (/v1/...), Anthropic (/v1/messages) and Ollama (/api/...) compatible APIs."})
	}))
}

// Handler returns the routes.
func (s *Server) Handler() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /api/v1/status", func(w http.ResponseWriter, r *http.Request) { reply(w, s.status(), nil) })
	m.HandleFunc("GET /api/v1/peers", func(w http.ResponseWriter, r *http.Request) { reply(w, s.Agent.Peers(), nil) })
	m.HandleFunc("POST /api/v1/peers/add", func(w http.ResponseWriter, r *http.Request) {
		var req apitype.AddPeerRequest
		if decode(w, r, &req) {
			p, err := s.Agent.AddPeer(r.Context(), req.Addr)
			reply(w, p, err)
		}
	})
	m.HandleFunc("POST /api/v1/peers/remove", func(w http.ResponseWriter, r *http.Request) {
		var req apitype.PeerRequest
		if decode(w, r, &req) {
			reply(w, struct{}{}, s.Agent.RemovePeer(req.Peer))
		}
	})
	m.HandleFunc("POST /api/v1/peers/probe", func(w http.ResponseWriter, r *http.Request) {
		var req apitype.PeerRequest
		if decode(w, r, &req) {
			reply(w, s.Agent.Probe(r.Context(), req.Peer), nil)
		}
	})
	m.HandleFunc("GET /api/v1/pair", func(w http.ResponseWriter, r *http.Request) { reply(w, s.Agent.PairStatus(), nil) })
	m.HandleFunc("POST /api/v1/pair/show", func(w http.ResponseWriter, r *http.Request) {
		p, err := s.Agent.ShowCode()
		reply(w, p, err)
	})
	m.HandleFunc("POST /api/v1/pair/enter", func(w http.ResponseWriter, r *http.Request) {
		var req apitype.PairEnterRequest
		if decode(w, r, &req) {
			p, err := s.Agent.EnterCode(r.Context(), req.Peer, req.Code)
			reply(w, p, err)
		}
	})
	m.HandleFunc("POST /api/v1/unpair", func(w http.ResponseWriter, r *http.Request) {
		var req apitype.PeerRequest
		if decode(w, r, &req) {
			p, err := s.Agent.Unpair(r.Context(), req.Peer)
			reply(w, p, err)
		}
	})
	m.HandleFunc("POST /api/v1/contribute", func(w http.ResponseWriter, r *http.Request) {
		var req apitype.ContributeRequest
		if decode(w, r, &req) {
			if err := s.Agent.SetContribute(req.On); err != nil {
				reply(w, nil, err)
				return
			}
			reply(w, s.status(), nil)
		}
	})
	m.HandleFunc("GET /api/v1/watch", s.watch)
	m.HandleFunc("GET /api/v1/doctor", func(w http.ResponseWriter, r *http.Request) { reply(w, s.Agent.Doctor(), nil) })
	m.HandleFunc("GET /api/v1/ring", s.ringStatus)
	s.registerUI(m)                                   // web UI: app/api/ui.go
	s.registerChat(m)                                 // chat: app/api/chat.go
	s.registerPull(m)                                 // model downloads: app/api/pull.go
	s.registerFolders(m)                              // the model folder's Browse: app/api/folders.go
	return s.registerCompat(s.auth(controlMisses(m))) // OpenAI, Anthropic, Ollama: app/api/compat.go
}

// controlMisses answers a control API path (/api/v1/…) the mux has no
// route for with apitype.Error, as every other control API error: 404, or
// 405 with Allow when the path has routes for other methods. (The mux's
// own answers are plain text.) It runs behind the token: without it, every
// control API path is 401, known or not.
func controlMisses(m *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := m.Handler(r); pattern != "" || !strings.HasPrefix(r.URL.Path, "/api/v1/") {
			m.ServeHTTP(w, r)
			return
		}
		var allow []string
		for _, method := range []string{http.MethodDelete, http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut} {
			other := r.Clone(r.Context())
			other.Method = method
			if _, pattern := m.Handler(other); pattern != "" {
				allow = append(allow, method)
			}
		}
		if len(allow) == 0 {
			writeJSON(w, http.StatusNotFound, apitype.Error{Error: fmt.Sprintf("%s is not a control API path; the package doc of app/api lists them.", r.URL.Path)})
			return
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeJSON(w, http.StatusMethodNotAllowed, apitype.Error{Error: fmt.Sprintf("%s %s is not allowed; use %s.", r.Method, r.URL.Path, orList(allow))})
	})
}

// orList writes "A", "A or B", "A, B or C".
func orList(xs []string) string { return listWith(xs, "or") }

// listWith writes "A", "A and B", "A, B and C" with word for "and".
func listWith(xs []string, word string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " " + word + " " + xs[len(xs)-1]
}

func (s *Server) auth(next http.Handler) http.Handler {
	want := []byte("Bearer " + s.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 &&
			subtle.ConstantTimeCompare([]byte(cookieToken(r)), []byte(s.Token)) != 1 && !publicPath(r) { // cookie and static UI: ui.go
			writeJSON(w, http.StatusUnauthorized, apitype.Error{Error: "Missing or wrong API token; read it from api.json in the config directory."})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// watch streams node events as server-sent events until the client goes.
func (s *Server) watch(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeJSON(w, http.StatusInternalServerError, apitype.Error{Error: "Streaming is not supported here."})
		return
	}
	events, cancel := s.Agent.Watch()
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case e, ok := <-events:
			if !ok {
				return
			}
			b, _ := json.Marshal(e)
			if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

// Serve serves h on ln until ctx ends.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	err := srv.Serve(ln)
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil && len(b) > 0 {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, apitype.Error{Error: "The request body is not valid JSON: " + err.Error()})
		return false
	}
	return true
}

func reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		writeJSON(w, statusOf(err), apitype.Error{Error: sentence(err)})
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// statusOf is err's HTTP status: its problem's Kind (the agent codes its
// errors, app/problem), else 502: a service failed behind the API.
func statusOf(err error) int {
	var pe *problem.Error
	if errors.As(err, &pe) {
		return kindStatus(problem.KindOf(pe))
	}
	return http.StatusBadGateway
}

// sentence is err as one sentence for a person. The agent's errors are
// problems (app/problem) whose text is one already; what else reaches here
// (a test's Chatter, a model file's parse error, the translators' request
// errors) is capitalised and given its full stop.
func sentence(err error) string { return problem.Sentence(err.Error()) }

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
