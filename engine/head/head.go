package head

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
	"unicode/utf8"

	"homering/engine/chat"
	"homering/engine/ggml"
	"homering/engine/llama"
	"homering/engine/ring"
	"homering/engine/sample"
)

// Config says what a Head runs.
type Config struct {
	ModelPath string
	NCtx      int // KV capacity in tokens; 0: the model's training context, at most 4096
	Threads   int // CPU threads; 0: all cores
	// GPULayers puts the model's first GPULayers layers on the GPU (0 ≤
	// GPULayers ≤ its layer count; Halda's n for a single device), and
	// OutputGPU its output norm and head too. Either without a GPU backend
	// loaded fails Open (ggml.ErrNoGPU).
	GPULayers int
	OutputGPU bool
	Logger    *slog.Logger
}

// Request is one generation.
type Request struct {
	Prompt    string         // raw prompt text; used when Messages is empty
	Messages  []chat.Message // a conversation, formatted with the model's template
	MaxTokens int            // 0: until end of generation or of the context
	Sampling  sample.Params
	Seed      uint64
}

// Token is one sampled token.
type Token struct {
	ID    int32
	Text  string // complete UTF-8 (see the package doc); may be empty
	EOG   bool   // the model ended the generation with this token
	Stats Stats  // so far
}

// Stats are timings of one Generate.
type Stats struct {
	PromptTokens int           // tokens in the prompt
	CachedTokens int           // of which were already in the KV cache
	PromptTime   time.Duration // evaluating the uncached prompt tokens
	Started      time.Time     // when the first prompt pass started
	DecodeTokens int           // tokens evaluated one at a time after the prompt
	DecodeTime   time.Duration
}

// Sentinel errors.
var (
	ErrEmptyPrompt = errors.New("head: the prompt is empty; give some text")
	ErrTooLong     = errors.New("head: the prompt does not fit in the context; shorten it or raise the context size")
)

// ubatch is the most tokens evaluated in one graph, as llama.cpp's n_ubatch.
const ubatch = 512

// Head generates text with a model on this machine.
type Head struct {
	model  *ggml.Model
	win    *ggml.Window
	vocab  *llama.Vocab
	nCtx   int
	cached []int32 // tokens whose KV entries are in win, position = index
	log    *slog.Logger
}

// Open loads the model (engine/ggml validates the file first) and its
// vocabulary.
func Open(cfg Config) (*Head, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := ggml.Open(cfg.ModelPath)
	if err != nil {
		return nil, err
	}
	info := m.Info()
	nCtx := cfg.NCtx
	if nCtx <= 0 {
		nCtx = min(max(info.NCtxTrain, 0), 4096)
		if nCtx == 0 {
			nCtx = 4096
		}
	}
	if cfg.GPULayers < 0 || cfg.GPULayers > info.NLayer {
		_ = m.Close()
		return nil, fmt.Errorf("head: %d GPU layers asked of a model of %d layers", cfg.GPULayers, info.NLayer)
	}
	var gpu []int
	for il := range cfg.GPULayers {
		gpu = append(gpu, il)
	}
	win, err := m.NewWindow(ggml.WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, GPULayers: gpu, OutputGPU: cfg.OutputGPU,
		NCtx: nCtx, Threads: cfg.Threads})
	if err != nil {
		_ = m.Close()
		return nil, err
	}
	v, err := llama.LoadVocab(cfg.ModelPath)
	if err != nil {
		_ = win.Close()
		_ = m.Close()
		return nil, err
	}
	if v.Size() != info.NVocab {
		_ = v.Close()
		_ = win.Close()
		_ = m.Close()
		return nil, fmt.Errorf("head: %s has %d tokens in its vocabulary but an output head of %d", cfg.ModelPath, v.Size(), info.NVocab)
	}
	log.Debug("model loaded", "path", cfg.ModelPath, "arch", info.Arch, "layers", info.NLayer, "gpu_layers", cfg.GPULayers, "output_gpu", cfg.OutputGPU, "ctx", nCtx)
	return &Head{model: m, win: win, vocab: v, nCtx: nCtx, log: log}, nil
}

// Close frees the window, the model and the vocabulary.
func (h *Head) Close() error {
	_ = h.vocab.Close()
	err := h.win.Close()
	return errors.Join(err, h.model.Close())
}

// Vocab is the model's vocabulary.
func (h *Head) Vocab() *llama.Vocab { return h.vocab }

// Info is the model's shape.
func (h *Head) Info() ggml.ModelInfo { return h.model.Info() }

// NCtx is the context size in tokens.
func (h *Head) NCtx() int { return h.nCtx }

// PromptTokens returns the tokens Generate would evaluate for req.
func (h *Head) PromptTokens(req Request) ([]int32, error) { return PromptTokens(h.vocab, req) }

// PromptTokens formats req with v's chat template (its messages; else its
// raw prompt) and tokenizes it: the one prompt handling of the single-device
// head and the ring's (engine/runner).
func PromptTokens(v *llama.Vocab, req Request) ([]int32, error) {
	text := req.Prompt
	if len(req.Messages) > 0 {
		var err error
		if text, err = v.Formatter().Format(req.Messages, true); err != nil {
			return nil, err
		}
	}
	if text == "" {
		return nil, ErrEmptyPrompt
	}
	return v.Tokenize(text, true, true)
}

// CheckContext says, as ErrTooLong, when prompt tokens leave no room in a
// context of nCtx for a reply.
func CheckContext(prompt, nCtx int) error {
	if prompt >= nCtx {
		return fmt.Errorf("%w (%d tokens, context %d)", ErrTooLong, prompt, nCtx)
	}
	return nil
}

// NewSampler is the sampler of a request with params p and seed, the same
// for one device and for the ring, so that a seeded reply is the same on
// either.
func NewSampler(p sample.Params, seed uint64) (*sample.Sampler, error) {
	return sample.New(p, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)))
}

// Generate runs req and calls emit for every sampled token. It returns nil
// when generation ends normally (end of generation, MaxTokens or the end of
// the context), ctx's error when cancelled, and emit's error if emit fails.
func (h *Head) Generate(ctx context.Context, req Request, emit func(Token) error) error {
	toks, err := h.PromptTokens(req)
	if err != nil {
		return err
	}
	if err := CheckContext(len(toks), h.nCtx); err != nil {
		return err
	}
	smp, err := NewSampler(req.Sampling, req.Seed)
	if err != nil {
		return err
	}
	for _, t := range toks {
		smp.Accept(t)
	}

	var st Stats
	st.PromptTokens = len(toks)
	keep := ring.CommonPrefix(h.cached, toks) // the same rule as a kept ring job (engine/ring)
	if keep == len(toks) {
		keep-- // the last prompt token must be evaluated for its logits
	}
	st.CachedTokens = keep
	h.win.KVTruncate(keep)
	h.cached = h.cached[:keep]
	start := time.Now()
	st.Started = start
	var logits []float32
	for i := keep; i < len(toks); i += ubatch {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk := toks[i:min(i+ubatch, len(toks))]
		if logits, err = h.win.EvalTokens(chunk, i); err != nil {
			return fmt.Errorf("head: evaluate prompt tokens [%d, %d): %w", i, i+len(chunk), err)
		}
		h.cached = append(h.cached, chunk...)
	}
	st.PromptTime = time.Since(start)

	var text UTF8Buffer
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		tok, err := smp.Sample(logits)
		if err != nil {
			return err
		}
		smp.Accept(tok)
		pos := len(h.cached)
		last := n == req.MaxTokens || pos >= h.nCtx // no room to evaluate it
		t := Token{ID: tok, Stats: st}
		if h.vocab.IsEOG(tok) {
			t.EOG, t.Text = true, text.Flush()
			return emit(t)
		}
		piece, err := h.vocab.TokenToPiece(tok)
		if err != nil {
			return err
		}
		t.Text = text.Add(piece, last)
		if err := emit(t); err != nil {
			return err
		}
		if last {
			return nil
		}
		start := time.Now()
		if logits, err = h.win.EvalTokens([]int32{tok}, pos); err != nil {
			return fmt.Errorf("head: evaluate token %d at %d: %w", tok, pos, err)
		}
		st.DecodeTime += time.Since(start)
		st.DecodeTokens++
		h.cached = append(h.cached, tok)
	}
}

// UTF8Buffer holds back the bytes of a character split across tokens (the
// one hold-back of the single-device head and the ring's). The zero value is
// empty.
type UTF8Buffer struct{ pending []byte }

// Add appends piece and returns the text that is complete; with flush it
// returns everything.
func (b *UTF8Buffer) Add(piece string, flush bool) string {
	b.pending = append(b.pending, piece...)
	if flush {
		return b.Flush()
	}
	n := completePrefix(b.pending)
	out := string(b.pending[:n])
	b.pending = append(b.pending[:0], b.pending[n:]...)
	return out
}

// Flush returns everything held.
func (b *UTF8Buffer) Flush() string {
	out := string(b.pending)
	b.pending = b.pending[:0]
	return out
}

// completePrefix is the length of p without a trailing incomplete (but so far
// valid) UTF-8 sequence. Invalid bytes count as complete: holding them back
// would never end.
func completePrefix(p []byte) int {
	for back := 1; back <= 3 && back <= len(p); back++ {
		c := p[len(p)-back]
		if c < 0x80 {
			return len(p) // ASCII: nothing is pending
		}
		if c >= 0xC0 { // a lead byte: is its sequence complete?
			if !utf8.FullRune(p[len(p)-back:]) {
				return len(p) - back
			}
			return len(p)
		}
	}
	return len(p)
}
