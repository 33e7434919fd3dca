package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"homering/app/agent"
	"homering/app/api/anthropic"
	"homering/app/api/apitype"
	"homering/app/api/ollama"
	"homering/app/api/openai"
	"homering/app/problem"
)

// compatAPI is which compatible API a request speaks to: its errors,
// whatever they are (unknown path, wrong method, unknown model, no key),
// take that API's shape, so that each official client raises its own
// NotFoundError, AuthenticationError and so on.
type compatAPI int

const (
	notCompat compatAPI = iota // the control API, the UI, or nothing
	apiOpenAI
	apiAnthropic
	apiOllama
)

func (a compatAPI) String() string {
	return [...]string{"control", "OpenAI", "Anthropic", "Ollama"}[a]
}

// compatAPIOf places a request: /v1/messages… is Anthropic's, and so is
// any /v1 request that sends anthropic-version (every Anthropic client
// does; /v1/models is both APIs' path); the rest of /v1 is OpenAI's; /api
// outside /api/v1 (the control API) is Ollama's.
func compatAPIOf(r *http.Request) compatAPI {
	p := r.URL.Path
	switch {
	case p == "/v1/messages" || strings.HasPrefix(p, "/v1/messages/"):
		return apiAnthropic
	case p == "/v1" || strings.HasPrefix(p, "/v1/"):
		if r.Header.Get("anthropic-version") != "" {
			return apiAnthropic
		}
		return apiOpenAI
	case p == "/api/v1" || strings.HasPrefix(p, "/api/v1/"):
		return notCompat
	case strings.HasPrefix(p, "/api/"):
		return apiOllama
	}
	return notCompat
}

// compatError writes an error in the shape of api. OpenAI's type is
// invalid_request_error for the caller's mistakes and server_error for
// ours, with code when not ""; Anthropic's type follows the status as its
// API's does.
func compatError(w http.ResponseWriter, api compatAPI, status int, msg, code string) {
	switch api {
	case apiOpenAI:
		typ := "invalid_request_error"
		if status >= 500 {
			typ = "server_error"
		}
		e := openai.NewError(typ, msg)
		if code != "" {
			e = e.WithCode(code)
		}
		writeJSON(w, status, e)
	case apiAnthropic:
		typ := "invalid_request_error"
		switch {
		case status == http.StatusUnauthorized:
			typ = "authentication_error"
		case status == http.StatusNotFound:
			typ = "not_found_error"
		case status >= 500:
			typ = "api_error"
		}
		writeJSON(w, status, anthropic.NewError(typ, msg))
	default:
		writeJSON(w, status, ollama.ErrorBody{Error: msg})
	}
}

// compatChatFail answers a chat that failed before its answer started, in
// api's shape: chatFailure's status and sentence, and for a prompt the
// context cannot hold OpenAI's own code, context_length_exceeded.
func compatChatFail(w http.ResponseWriter, api compatAPI, err error) {
	status, msg := chatFailure(err)
	code := ""
	var pe *problem.Error
	if api == apiOpenAI && errors.As(err, &pe) && pe.Code == problem.ContextFull {
		code = "context_length_exceeded"
	}
	compatError(w, api, status, msg, code)
}

// compatFail is compatError for one request, as the handlers' fail.
func compatFail(w http.ResponseWriter, api compatAPI) func(status int, msg string) {
	return func(status int, msg string) { compatError(w, api, status, msg, "") }
}

// modelNotFound answers a request for a model this device does not have
// with the API's own 404: OpenAI's model_not_found code, Ollama's "model
// 'x' not found", Anthropic's not_found_error.
func modelNotFound(w http.ResponseWriter, api compatAPI, model string) {
	switch api {
	case apiOpenAI:
		writeJSON(w, http.StatusNotFound, openai.ModelNotFound(model))
	case apiAnthropic:
		writeJSON(w, http.StatusNotFound, anthropic.ModelNotFound(model))
	default:
		writeJSON(w, http.StatusNotFound, ollama.NotFound(model))
	}
}

// compatEndpoints are the compatible APIs' routes: path, then method.
// GET routes answer HEAD too (Ollama's clients probe with HEAD).
func (s *Server) compatEndpoints() map[string]map[string]http.HandlerFunc {
	return map[string]map[string]http.HandlerFunc{
		"/v1/chat/completions": {"POST": s.openaiChat},
		"/v1/completions":      {"POST": s.openaiCompletion},
		"/v1/models":           {"GET": s.listModels},
		"/v1/models/{id}":      {"GET": s.getModel},
		"/v1/messages":         {"POST": s.anthropicMessages},
		"/api/chat":            {"POST": s.ollamaChat},
		"/api/generate":        {"POST": s.ollamaGenerate},
		"/api/tags":            {"GET": s.ollamaTags},
		"/api/show":            {"POST": s.ollamaShow},
		"/api/ps":              {"GET": s.ollamaPS},
		"/api/version": {"GET": func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, ollama.VersionResponse{Version: ollama.Version})
		}},
	}
}

// compatRouter serves the compatible APIs' paths: an unknown path is a
// 404 and a known path with another method a 405 (with Allow), each in
// the shape of the API the path belongs to. compatAuth runs first, so a
// client on another computer without the key learns nothing of the paths.
func (s *Server) compatRouter() http.Handler {
	routes := s.compatEndpoints()
	// Each API's paths, for the sentence of an unknown one.
	paths := map[compatAPI][]string{}
	for p := range routes {
		api := compatAPIOf(&http.Request{URL: &url.URL{Path: p}})
		paths[api] = append(paths[api], p)
		if strings.HasPrefix(p, "/v1/models") {
			paths[apiAnthropic] = append(paths[apiAnthropic], p) // both APIs' path
		}
	}
	for _, ps := range paths {
		slices.Sort(ps)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api, path := compatAPIOf(r), r.URL.Path
		key := path
		if id, ok := strings.CutPrefix(path, "/v1/models/"); ok && id != "" {
			key = "/v1/models/{id}"
			r.SetPathValue("id", id)
		}
		methods, ok := routes[key]
		if !ok {
			compatError(w, api, http.StatusNotFound, fmt.Sprintf("Invalid URL (%s %s); this device's %s API has %s.", r.Method, path, api, listWith(paths[api], "and")), "")
			return
		}
		h := methods[r.Method]
		if h == nil && r.Method == http.MethodHead {
			h = methods[http.MethodGet]
		}
		if h == nil {
			var allow []string
			for m := range methods {
				allow = append(allow, m)
				if m == http.MethodGet {
					allow = append(allow, http.MethodHead)
				}
			}
			slices.Sort(allow)
			w.Header().Set("Allow", strings.Join(allow, ", "))
			compatError(w, api, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s is not allowed; use %s.", r.Method, path, orList(allow)), "")
			return
		}
		h(w, r)
	})
}

// compatModels is what /v1/models and /api/tags list: the selected model
// first, then every usable GGUF of the model sources (agent.ScanModels) by the
// name the model list shows.
func (s *Server) compatModels() []compatModel {
	set := s.settings()
	sel := s.selected()
	home := userHome()
	return s.catalog.list(sel, home, set.ModelDir)
}

// selected is the agent's selected model as a catalogue entry (nil: none).
func (s *Server) selected() *compatModel {
	ms := s.served()
	if len(ms) == 0 {
		return nil
	}
	return &compatModel{ServedModel: ms[0], selected: true}
}

// findModel resolves the model a request names: "" is the selected model
// (the agent says when there is none); otherwise any name that answers to
// it (compatModel.answers). ok is false for a name no model answers to.
func (s *Server) findModel(asked string) (m compatModel, ok bool) {
	sel := s.selected()
	if strings.TrimSpace(asked) == "" {
		if sel == nil {
			return compatModel{}, true
		}
		return *sel, true
	}
	if sel != nil && sel.answers(asked) {
		return *sel, true // no scan for the usual case
	}
	for _, m := range s.compatModels() {
		if m.answers(asked) {
			return m, true
		}
	}
	return compatModel{}, false
}

// settings are the saved settings (the defaults when unreadable: the
// agent runs on those then too).
func (s *Server) settings() apitype.Settings { return s.Agent.ReadSettings() }

// MaxTokensCappedHeader is set on an answer whose max_tokens (num_predict)
// asked for more than the context holds: its value is the limit used
// instead, the context's size. The reply then ends when the context is
// full, with the API's finish reason for a cut reply ("length";
// Anthropic's "model_context_window_exceeded").
const MaxTokensCappedHeader = "X-Homering-Max-Tokens-Capped"

// capMaxTokens lowers a max_tokens beyond the context to the context's
// size, and says so in MaxTokensCappedHeader.
func (s *Server) capMaxTokens(w http.ResponseWriter, req *apitype.ChatRequest) {
	n := req.NumCtx
	if n <= 0 {
		n = s.settings().ContextTokens
	}
	if n > 0 && req.MaxTokens > n {
		s.Log.Info("max_tokens capped to the context", "asked", req.MaxTokens, "context", n)
		req.MaxTokens = n
		w.Header().Set(MaxTokensCappedHeader, strconv.Itoa(n))
	}
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	ms := s.compatModels()
	if compatAPIOf(r) == apiAnthropic {
		var l []anthropic.ModelInfo
		for _, m := range ms {
			l = append(l, anthropic.NewModelInfo(m.Name, time.Unix(m.Modified, 0)))
		}
		writeJSON(w, http.StatusOK, anthropic.Models(l))
		return
	}
	var l []apitype.ServedModel
	for _, m := range ms {
		l = append(l, m.ServedModel)
	}
	writeJSON(w, http.StatusOK, openai.Models(l))
}

func (s *Server) getModel(w http.ResponseWriter, r *http.Request) {
	api, id := compatAPIOf(r), r.PathValue("id")
	m, ok := s.findModel(id)
	if !ok || m.Name == "" {
		modelNotFound(w, api, id)
		return
	}
	if api == apiAnthropic {
		writeJSON(w, http.StatusOK, anthropic.NewModelInfo(m.Name, time.Unix(m.Modified, 0)))
		return
	}
	writeJSON(w, http.StatusOK, openai.Models([]apitype.ServedModel{m.ServedModel}).Data[0])
}

func (s *Server) ollamaTags(w http.ResponseWriter, r *http.Request) {
	var l []ollama.Model
	for _, m := range s.compatModels() {
		l = append(l, m.ollama())
	}
	writeJSON(w, http.StatusOK, ollama.TagsOf(l))
}

func (s *Server) ollamaShow(w http.ResponseWriter, r *http.Request) {
	var req ollama.ShowRequest
	if !decode(w, r, &req) {
		return
	}
	asked := req.Asked()
	if asked == "" {
		compatError(w, apiOllama, http.StatusBadRequest, "The model is missing; name one of GET /api/tags in \"model\".", "")
		return
	}
	m, ok := s.findModel(asked)
	if !ok || m.Name == "" {
		modelNotFound(w, apiOllama, asked)
		return
	}
	m = s.catalog.describe(m)
	info, err := agent.ModelInfo(m.Path, req.Verbose)
	if err != nil && m.Path != "" {
		compatError(w, apiOllama, http.StatusUnprocessableEntity, fmt.Sprintf("%s cannot be read as a model (%s); choose another.", m.Name, strings.TrimSuffix(sentence(err), ".")), "")
		return
	}
	o := m.ollama()
	o.Tools = agent.HasToolCalling(m.Path)
	writeJSON(w, http.StatusOK, ollama.Show(o, info))
}

// keptUntil is /api/ps's expires_at: the engine keeps a model until
// another is asked for, as Ollama does with keep_alive -1, for which it
// answers a time centuries ahead.
var keptUntil = time.Date(2318, 1, 1, 0, 0, 0, 0, time.UTC)

// ollamaPS lists the model the engine holds: the one that answered last
// (the agent's MeasuredChat), with the context it runs with.
func (s *Server) ollamaPS(w http.ResponseWriter, r *http.Request) {
	path := s.Agent.Loaded()
	if path == "" {
		writeJSON(w, http.StatusOK, ollama.PS(nil, 0, keptUntil))
		return
	}
	m := compatModel{ServedModel: apitype.ServedModel{Path: path}}
	for _, c := range s.compatModels() {
		if c.Path == path {
			m = c
		}
	}
	m = s.catalog.describe(m)
	if m.Name == "" {
		m.Name = fileModelName(path)
	}
	o := m.ollama()
	writeJSON(w, http.StatusOK, ollama.PS(&o, s.settings().ContextTokens, keptUntil))
}
