package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"homering/app/api/apitype"
	"homering/internal/bytesize"
)

// Chatter runs generations for the chat endpoints: the agent is one
// (chat.go); the API's tests wire anything that streams.
type Chatter interface {
	// Chat streams the reply to req through emit (never with empty text)
	// and returns its stats. A generation stopped by StopChat or by ctx
	// returns its stats with StopReason "cancelled" and a nil error.
	Chat(ctx context.Context, req apitype.ChatRequest, emit func(text string) error) (apitype.ChatStats, error)
	// StopChat stops the generation of a conversation ("" : all) and says
	// how many it stopped.
	StopChat(conversationID string) int
	// Served lists the model the chat endpoints answer with (none when no
	// model is selected).
	Served() []apitype.ServedModel
	// Running is how many generations run now (the tray's busy icon).
	Running() int
}

// MeasuredChat is a Chatter under the agent's chat meter (MeasureChat),
// which sees everything the UI shows about a generation besides its text:
//
//   - the decode speed of every finished generation (from the UI or any
//     compatible API), so the device map can show a measured ms/token
//     beside Halda's prediction (on the single-device path the head runs
//     every layer, so its measurement is the whole token);
//   - the wait before the first token as a Work task: "load" when the
//     served model has not answered since the engine last failed or the
//     model changed, "prompt" when it is warm, "queue" beside or behind
//     another generation (ring chats on one model run at once, as many
//     as the plan admits, others in turn). The runner protocol says nothing between the request and the
//     first token, so this is what the
//     agent can see; the bar fills against how long the same wait took
//     last time, remembered across restarts in LoadTimesFile.
type MeasuredChat struct {
	Chatter // the Chatter measured; its optional interfaces are the API's to look for
	m       *chatMeter
}

// MeasureChat puts c under the agent's chat meter (c itself when it is
// already under one).
func (b *Agent) MeasureChat(c Chatter) *MeasuredChat {
	if mc, ok := c.(*MeasuredChat); ok {
		return mc
	}
	return &MeasuredChat{Chatter: c, m: b.meter}
}

// Loaded is the model path that answered last, which the engine still
// holds ("" when none, or after a failure).
func (b *Agent) Loaded() string { return b.meter.loaded() }

// Chat runs c's Chat, showing its wait as a Work task and remembering
// what it measured.
func (mc *MeasuredChat) Chat(ctx context.Context, req apitype.ChatRequest, emit func(string) error) (apitype.ChatStats, error) {
	return mc.m.chat(ctx, mc.Chatter, req, emit)
}

// chatMeter is the state behind MeasuredChat. Safe for concurrent use.
type chatMeter struct {
	work  *Work
	now   func() time.Time
	store string        // LoadTimesFile's path; "": remember in memory only
	seq   atomic.Uint64 // task IDs

	mu       sync.Mutex // guards the fields below
	last     *measurement
	warm     string                   // model path that answered last; "" after a failure
	loadTook map[string]time.Duration // model path → its last load (first token − prompt)
	inflight int
}

type measurement struct {
	msPerToken float64
	at         time.Time
}

// LoadTimesFile, in the config directory, keeps how long each model took to
// load last time ({"/path/m.gguf": milliseconds}), so the first load after
// a restart has an estimate too.
const LoadTimesFile = "load-times.json"

// newChatMeter shows waits in w; store is LoadTimesFile's path ("": none).
func newChatMeter(w *Work, now func() time.Time, store string) *chatMeter {
	m := &chatMeter{work: w, now: now, store: store, loadTook: map[string]time.Duration{}}
	if store != "" {
		// A missing or damaged file only means no estimates yet.
		if b, err := os.ReadFile(store); err == nil {
			var ms map[string]int64
			if json.Unmarshal(b, &ms) == nil {
				for k, v := range ms {
					if v > 0 {
						m.loadTook[k] = time.Duration(v) * time.Millisecond
					}
				}
			}
		}
	}
	return m
}

// saveLoadTimes writes loadTook to the store (m.mu held). Failing to write
// costs only the next restart's estimate, so errors are dropped.
func (m *chatMeter) saveLoadTimes() {
	if m.store == "" {
		return
	}
	ms := make(map[string]int64, len(m.loadTook))
	for k, v := range m.loadTook {
		ms[k] = v.Milliseconds()
	}
	b, err := json.Marshal(ms)
	if err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(m.store), ".load-times-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), m.store) != nil {
		_ = os.Remove(tmp.Name())
	}
}

// waitTask words the wait before the first token (m.mu held).
func (m *chatMeter) waitTask(model apitype.ServedModel, queued bool) (kind, title, detail string, expected time.Duration) {
	switch {
	case queued:
		// Ring chats on the same model run at once (engine/ring/job
		// streams), as many as the plan admits (its KV caches fit: the
		// device map's "streams"); beyond them, on this device alone or
		// on another model, chats take turns.
		return "queue", "Another reply is in progress", "On a ring of devices this message runs beside it while the ring's memory admits another conversation (the device map says how many); otherwise it starts when one ends.", 0
	case model.Path != "" && model.Path == m.warm:
		return "prompt", "Reading your message", "The model is loaded; the reply starts once the conversation is read.", 0
	}
	name := model.Name
	if name == "" {
		name = "the model"
	}
	detail = "Reading the weights from disk; the reply starts when they are in memory."
	if model.Size > 0 {
		detail = fmt.Sprintf("Reading %s of weights from disk; the reply starts when they are in memory.", bytesize.Text(model.Size))
	}
	return "load", "Loading " + name, detail, m.loadTook[model.Path]
}

func (m *chatMeter) chat(ctx context.Context, c Chatter, req apitype.ChatRequest, emit func(string) error) (apitype.ChatStats, error) {
	var model apitype.ServedModel
	if s := c.Served(); len(s) > 0 {
		model = s[0]
	}
	other := req.ModelPath != "" && req.ModelPath != model.Path
	if other {
		// A request for another model than the selected one (a compatible
		// API's): its load is its own, and its speed not the selected
		// model's that the device map shows.
		model = apitype.ServedModel{Name: req.Model, Path: req.ModelPath}
		if fi, err := os.Stat(req.ModelPath); err == nil {
			model.Size = fi.Size()
		}
	}
	start := m.now()
	m.mu.Lock()
	kind, title, detail, expected := m.waitTask(model, m.inflight > 0)
	m.inflight++
	m.mu.Unlock()
	id := fmt.Sprintf("chat-%d", m.seq.Add(1))
	m.work.Begin(start, id, kind, title, detail, expected)
	var first time.Time
	st, err := c.Chat(ctx, req, func(text string) error {
		if first.IsZero() {
			first = m.now()
			m.work.End(id)
		}
		return emit(text)
	})
	m.work.End(id)

	m.mu.Lock()
	defer m.mu.Unlock()
	m.inflight--
	switch {
	case err != nil && ctx.Err() == nil:
		m.warm = "" // the engine may have died: the next chat loads again
	case err == nil:
		if kind == "load" && !first.IsZero() {
			m.loadTook[model.Path] = max(first.Sub(start)-time.Duration(st.PromptMS*float64(time.Millisecond)), 0)
			m.saveLoadTimes()
		}
		if st.CompletionTokens > 0 {
			m.warm = model.Path
		}
		if st.TokensPerSecond > 0 && st.CompletionTokens > 1 && !other {
			m.last = &measurement{msPerToken: 1000 / st.TokensPerSecond, at: m.now()}
		}
	}
	return st, err
}

// loaded is the model path that answered last ("" when none, or after a
// failure).
func (m *chatMeter) loaded() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.warm
}

// measured returns the last measured ms/token, or nil.
func (m *chatMeter) measured() *float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		return nil
	}
	v := m.last.msPerToken
	return &v
}
