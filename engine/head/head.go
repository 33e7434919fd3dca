package head

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
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
	// Constraint, when not nil, limits the tokens sampled (structured
	// output: engine/llama's Grammar). It is the request's own: Run
	// advances it.
	Constraint Constraint
}

// Constraint limits which tokens may come next: a grammar, whose
// end-of-generation tokens it allows only once the reply is complete.
// engine/llama's Grammar is one; this package needs no cgo for it.
type Constraint interface {
	// Accept advances past tok when tok may come next and says whether it
	// could; a refused token leaves the constraint as it was.
	Accept(tok int32) bool
	// Mask sets the logit of every token that may not come next to -Inf.
	Mask(logits []float32)
}

// Token is one sampled token.
type Token struct {
	ID    int32
	Text  string // complete UTF-8 (see the package doc); may be empty
	EOG   bool   // the model ended the generation with this token
	Stats Stats  // so far
}

// Stats are counts and timings of one generation.
type Stats struct {
	PromptTokens int           // tokens in the prompt
	CachedTokens int           // of which were already in the KV cache
	PromptTime   time.Duration // evaluating the uncached prompt tokens
	Started      time.Time     // when the first prompt pass started (the model ready: a ring's plan up)
	Tokens       int           // tokens emitted, an end-of-generation token aside
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
	cached []int32   // tokens whose KV entries are in win, position = index
	logits []float32 // the last Eval's, reused: no allocation per token
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
	nCtx := ContextSize(cfg.NCtx, info.NCtxTrain)
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
// head and the ring's (engine/ring/job).
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

// ContextSize is the context a generation gets of a model trained on
// nTrain tokens when asked for n tokens: n, or for n <= 0 the training
// context up to 4096 (4096 when the model says none). The one default of
// the single-device head and the ring's.
func ContextSize(n, nTrain int) int {
	if n > 0 {
		return n
	}
	if nTrain <= 0 {
		return 4096
	}
	return min(nTrain, 4096)
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

// Model is what the generation loop evaluates tokens on: this device's
// window of the whole model (Head) or a ring of devices' windows, the head's
// first (engine/ring/job); a single device is a ring of one window. Both
// methods end early with ctx's error when ctx is cancelled.
type Model interface {
	// Begin readies the KV caches for a request whose prompt is toks
	// (fitting the context) that generates at most maxTokens (0: to the end
	// of the context) and returns how many leading prompt tokens they hold
	// already: fewer than len(toks), since the last must be evaluated for
	// its logits. The caches hold nothing past them afterwards.
	Begin(ctx context.Context, toks []int32, maxTokens int) (cached int, err error)
	// Eval evaluates toks at positions [pos, pos+len(toks)), right after
	// those the caches hold, and returns the logits of the last (a slice
	// the caller may write into, valid until the next Eval). The model
	// picks its passes: llama.cpp's micro-batches on one device, so that
	// the logits are llama.cpp's bits.
	Eval(ctx context.Context, toks []int32, pos int) ([]float32, error)
}

// Generate runs req and calls emit for every sampled token. It returns nil
// when generation ends normally (end of generation, MaxTokens or the end of
// the context), ctx's error when cancelled, and emit's error if emit fails.
func (h *Head) Generate(ctx context.Context, req Request, emit func(Token) error) error {
	_, err := Run(ctx, h, h.vocab, h.nCtx, req, emit)
	return err
}

// Run is the one generation loop, of the single-device head (Generate) and
// of the ring's: it builds the prompt of req with v, checks it against a
// context of nCtx tokens, evaluates it on m (from what m's caches hold),
// then samples, calls emit for every token, and evaluates each on m until
// an end-of-generation token, MaxTokens, the end of the context, ctx's
// cancellation or an error (emit's too). It returns the stats so far and
// nil when generation ended normally.
func Run(ctx context.Context, m Model, v *llama.Vocab, nCtx int, req Request, emit func(Token) error) (Stats, error) {
	var st Stats
	toks, err := PromptTokens(v, req)
	if err != nil {
		return st, err
	}
	st.PromptTokens = len(toks)
	if err := CheckContext(len(toks), nCtx); err != nil {
		return st, err
	}
	smp, err := NewSampler(req.Sampling, req.Seed)
	if err != nil {
		return st, err
	}
	for _, t := range toks {
		smp.Accept(t)
	}
	if st.CachedTokens, err = m.Begin(ctx, toks, req.MaxTokens); err != nil {
		return st, err
	}
	st.Started = time.Now()
	logits, err := m.Eval(ctx, toks[st.CachedTokens:], st.CachedTokens)
	if err != nil {
		return st, err
	}
	st.PromptTime = time.Since(st.Started)

	var text UTF8Buffer
	for pos := len(toks); ; pos++ {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		tok, err := sampleNext(smp, req.Constraint, logits)
		if err != nil {
			return st, err
		}
		smp.Accept(tok)
		if v.IsEOG(tok) {
			return st, emit(Token{ID: tok, EOG: true, Text: text.Flush(), Stats: st})
		}
		st.Tokens++
		last := st.Tokens == req.MaxTokens || pos >= nCtx // no room to evaluate it
		piece, err := v.TokenToPiece(tok)
		if err != nil {
			return st, err
		}
		if err := emit(Token{ID: tok, Text: text.Add(piece, last), Stats: st}); err != nil {
			return st, err
		}
		if last {
			return st, nil
		}
		start := time.Now()
		if logits, err = m.Eval(ctx, []int32{tok}, pos); err != nil {
			return st, err
		}
		st.DecodeTime += time.Since(start)
		st.DecodeTokens++
	}
}

// ErrConstraint is returned when a request's constraint allows no token
// at all: its grammar wants text no token of the vocabulary spells.
var ErrConstraint = errors.New("head: the grammar allows no token of this model's vocabulary next; loosen the grammar or the schema")

// sampleNext samples the next token and advances c (nil: none) past it. A
// constraint is asked about the token sampled from the model's logits
// first, and only when it refuses it are the logits masked and sampled
// again: llama.cpp's common_sampler does the same, since a grammar's
// check of one token costs little and a mask of the whole vocabulary
// much. Greedy picks the same token either way; sampling at a
// temperature draws from the unmasked distribution first, as llama.cpp.
// Masking writes into logits, which are the loop's own.
func sampleNext(smp *sample.Sampler, c Constraint, logits []float32) (int32, error) {
	tok, err := smp.Sample(logits)
	if err != nil || c == nil || c.Accept(tok) {
		return tok, err
	}
	c.Mask(logits)
	if tok, err = smp.Sample(logits); err != nil {
		return 0, err
	}
	// Every token masked leaves the sampler a -Inf one; Accept refuses it.
	if math.IsInf(float64(logits[tok]), -1) || !c.Accept(tok) {
		return 0, ErrConstraint
	}
	return tok, nil
}

// Begin keeps the longest prefix of the cached tokens that toks shares (the
// Model of a single device).
func (h *Head) Begin(_ context.Context, toks []int32, _ int) (int, error) {
	keep := ring.CommonPrefix(h.cached, toks) // the same rule as a kept ring job (engine/ring)
	if keep == len(toks) {
		keep-- // the last prompt token must be evaluated for its logits
	}
	h.win.KVTruncate(keep)
	h.cached = h.cached[:keep]
	return keep, nil
}

// Eval evaluates toks in llama.cpp's micro-batches of 512 (the Model of a
// single device).
func (h *Head) Eval(ctx context.Context, toks []int32, pos int) ([]float32, error) {
	if len(toks) == 0 {
		return nil, nil
	}
	for i := 0; i < len(toks); i += ubatch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		chunk := toks[i:min(i+ubatch, len(toks))]
		logits, err := h.win.EvalTokensInto(h.logits, chunk, pos+i)
		if err != nil {
			return nil, fmt.Errorf("head: evaluate tokens [%d, %d): %w", pos+i, pos+i+len(chunk), err)
		}
		h.logits = logits
		h.cached = append(h.cached, chunk...)
	}
	return h.logits, nil
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
