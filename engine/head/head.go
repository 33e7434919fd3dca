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
	// Opening follows the template's generation prompt when Messages are
	// formatted: what the family's own template writes there and
	// llama.cpp's rendering leaves out (engine/chat.ReplyOpening).
	Opening string
	// Constraint, when not nil, limits the tokens sampled (structured
	// output: engine/llama's Grammar). It is the request's own: Run
	// advances it.
	Constraint Constraint
	// Draft, when not nil, speculates (see Speculation): it proposes up to
	// DraftTokens tokens (0: DefaultDraftTokens) that the Model verifies in
	// one pass, which must then be a Verifier. The draft's caches are the
	// request's for its length: one request at a time on a draft.
	Draft       Drafter
	DraftTokens int
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
	DecodeTokens int           // tokens evaluated after the prompt (one at a time, or verified in a speculative pass)
	DecodeTime   time.Duration // with speculation: drafting and verifying too
	// Speculation (Request.Draft): Drafted tokens proposed by the draft,
	// of which Accepted were the target's own choice; Verifications passes
	// of the target over a last token and its drafts.
	Drafted, Accepted, Verifications int
}

// AcceptRate is the share of drafted tokens the target accepted (0 when
// none was drafted).
func (s Stats) AcceptRate() float64 {
	if s.Drafted == 0 {
		return 0
	}
	return float64(s.Accepted) / float64(s.Drafted)
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
	rows   []float32 // the last EvalAll's, reused likewise
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
		text += req.Opening
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

// Verifier is a Model that speculative decoding verifies drafts on.
type Verifier interface {
	Model
	// EvalAll is Eval in one pass that returns the logits of every row of
	// toks, row after row (len(toks) × the vocabulary; valid until the next
	// evaluation). At most MaxDraftTokens+1 tokens.
	EvalAll(ctx context.Context, toks []int32, pos int) ([]float32, error)
	// Truncate forgets the positions >= pos of every cache (every device's
	// of a ring): the rejected drafts.
	Truncate(ctx context.Context, pos int) error
}

// Drafter is the small model that proposes tokens: a Model whose rejected
// proposals are rolled back with Truncate. A Head is one.
type Drafter interface {
	Model
	Truncate(ctx context.Context, pos int) error
}

// DefaultDraftTokens is how many tokens a draft proposes per verification
// when a request does not say: a pass of 4 rows still runs on engine/ggml's
// token-step kernels (1-4 tokens), which read each weight once, and costs
// 1.5-1.8x one row, where 5 rows cost 4-6x (bench/spec.sh). MaxDraftTokens
// bounds it (a verification pass's rows attend row by row: ggml's
// RowAttentionRows).
const (
	DefaultDraftTokens = 3
	MaxDraftTokens     = ggml.RowAttentionRows - 1
)

// ErrNotVerifier: a request with a draft on a Model that cannot verify.
var ErrNotVerifier = errors.New("head: this model cannot verify a draft's tokens; run the request without a draft")

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
	spec, err := newSpeculation(m, req, len(toks))
	if err != nil {
		return st, err
	}
	if st.CachedTokens, err = m.Begin(ctx, toks, req.MaxTokens); err != nil {
		return st, err
	}
	if spec != nil {
		if spec.draftLen, err = spec.draft.Begin(ctx, toks, req.MaxTokens); err != nil {
			return st, err
		}
		spec.seq = append(spec.seq, toks...)
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
		// A drafted token the target chose too is in the caches already,
		// and the verification's next row is the logits after it.
		verified := spec != nil && spec.accept(tok)
		if verified {
			st.Accepted++
			st.DecodeTokens++
		}
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
		switch {
		case verified:
			logits = spec.next()
		case spec != nil:
			left := nCtx - 1 - pos // positions after tok's
			if req.MaxTokens > 0 {
				left = min(left, req.MaxTokens-st.Tokens-1) // tokens still to sample after the next
			}
			if logits, err = spec.step(ctx, tok, pos, left, v, &st); err != nil {
				return st, err
			}
			st.DecodeTokens++
		default:
			if logits, err = m.Eval(ctx, []int32{tok}, pos); err != nil {
				return st, err
			}
			st.DecodeTokens++
		}
		st.DecodeTime += time.Since(start)
	}
}

// speculation is a request's speculative decoding (Request.Draft): the
// draft proposes up to k tokens greedily after the last sampled one, the
// target evaluates the last token and the drafts in one pass with logits
// for every row, and the loop samples from those rows in turn for as long
// as each sampled token is the draft that the next row was computed after;
// at the first that is not, the caches forget the rejected drafts and the
// sampled token is evaluated (with new drafts) as without speculation. The
// tokens are exactly the unspeculated ones because every token is still
// sampled from the target's logits after the same tokens; only greedy
// requests speculate (newSpeculation), since sampling at a temperature
// would need the rejection sampling of Leviathan et al. to keep its
// distribution and draws the seeded random numbers differently.
type speculation struct {
	target   Verifier
	draft    Drafter
	k        int
	seq      []int32 // the prompt and every sampled token, position = index
	draftLen int     // positions the draft's cache holds (all seq's)
	kvLen    int     // positions the target's cache holds, drafts included
	rows     []float32
	nVocab   int
	drafts   []int32 // drafts not yet checked; rows holds the logits after each
}

// newSpeculation is req's speculation on m, nil without a draft or when
// the request samples at a temperature.
func newSpeculation(m Model, req Request, promptLen int) (*speculation, error) {
	if req.Draft == nil || req.Sampling.Temperature > 0 {
		return nil, nil
	}
	vm, ok := m.(Verifier)
	if !ok {
		return nil, ErrNotVerifier
	}
	k := req.DraftTokens
	if k <= 0 {
		k = DefaultDraftTokens
	}
	return &speculation{target: vm, draft: req.Draft, k: min(k, MaxDraftTokens), kvLen: promptLen}, nil
}

// accept records tok and says whether it is the next draft.
func (s *speculation) accept(tok int32) bool {
	s.seq = append(s.seq, tok)
	if len(s.drafts) > 0 && s.drafts[0] == tok {
		s.drafts = s.drafts[1:]
		return true
	}
	s.drafts = s.drafts[:0]
	return false
}

// next is the verification's row after the draft just accepted.
func (s *speculation) next() []float32 {
	s.rows = s.rows[s.nVocab:]
	return s.rows[:s.nVocab]
}

// step evaluates tok at pos on the target with up to min(k, left) drafts
// and returns the logits after tok.
func (s *speculation) step(ctx context.Context, tok int32, pos, left int, v vocab, st *Stats) ([]float32, error) {
	if s.kvLen > pos { // rejected drafts
		if err := s.target.Truncate(ctx, pos); err != nil {
			return nil, err
		}
	}
	if s.draftLen > pos {
		if err := s.draft.Truncate(ctx, pos); err != nil {
			return nil, err
		}
		s.draftLen = pos
	}
	// The draft proposes greedily: it first catches up with the sampled
	// tokens it has not seen (the prompt's rest, an accepted last draft).
	batch := append(make([]int32, 0, s.k+1), tok)
	for range max(0, min(s.k, left)) {
		lg, err := s.draft.Eval(ctx, s.seq[s.draftLen:], s.draftLen)
		if err != nil {
			return nil, err
		}
		s.draftLen = len(s.seq)
		d := argmax(lg)
		batch = append(batch, d)
		s.seq = append(s.seq, d) // taken back below: seq holds sampled tokens only
		if v.IsEOG(d) {
			break // the target would end there
		}
	}
	s.seq = s.seq[:pos+1]
	s.drafts = append(s.drafts[:0], batch[1:]...)
	if len(s.drafts) == 0 {
		s.kvLen = pos + 1
		return s.target.Eval(ctx, batch, pos)
	}
	rows, err := s.target.EvalAll(ctx, batch, pos)
	if err != nil {
		return nil, err
	}
	s.kvLen = pos + len(batch)
	s.nVocab = len(rows) / len(batch)
	s.rows = rows
	st.Drafted += len(s.drafts)
	st.Verifications++
	return rows[:s.nVocab], nil
}

// vocab is what speculation asks of the vocabulary.
type vocab interface{ IsEOG(int32) bool }

// argmax is the greedy choice, the lowest id on ties (engine/sample's).
func argmax(lg []float32) int32 {
	best := 0
	for i, x := range lg {
		if x > lg[best] {
			best = i
		}
	}
	return int32(best)
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

// EvalAll evaluates toks (at most MaxDraftTokens+1) in one pass with the
// logits of every row (the Verifier of a single device).
func (h *Head) EvalAll(ctx context.Context, toks []int32, pos int) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(toks) == 0 || len(toks) > MaxDraftTokens+1 {
		return nil, fmt.Errorf("head: %d tokens to verify in one pass; give 1 to %d", len(toks), MaxDraftTokens+1)
	}
	h.win.SetAllLogits(true)
	h.win.SetRowAttention(true)
	logits, err := h.win.EvalTokensInto(h.rows, toks, pos)
	h.win.SetAllLogits(false)
	h.win.SetRowAttention(false)
	if err != nil {
		return nil, fmt.Errorf("head: verify tokens [%d, %d): %w", pos, pos+len(toks), err)
	}
	h.rows = logits
	h.cached = append(h.cached, toks...)
	return logits, nil
}

// Truncate forgets positions >= pos (the Verifier and Drafter of a single
// device).
func (h *Head) Truncate(_ context.Context, pos int) error {
	pos = max(0, min(pos, len(h.cached)))
	h.win.KVTruncate(pos)
	h.cached = h.cached[:pos]
	return nil
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
