package gguf

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ModelShape is the hyper-parameters of a transformer as llama.cpp reads them
// from "<arch>.*" keys (llama-model.cpp load_hparams), with its defaults.
type ModelShape struct {
	Arch      string // general.architecture
	Name      string // general.name, may be empty
	NLayer    int    // block_count
	NEmbd     int    // embedding_length
	NFF       int    // feed_forward_length (0 if absent)
	NHead     int    // attention.head_count
	NHeadKV   int    // attention.head_count_kv (default NHead)
	HeadDimK  int    // attention.key_length (default NEmbd/NHead)
	HeadDimV  int    // attention.value_length (default NEmbd/NHead)
	NRot      int    // rope.dimension_count (default HeadDimK)
	NVocab    int    // rows of token_embd.weight, else tokenizer.ggml.tokens
	NCtxTrain int    // context_length (0 if absent)

	// Mixture of experts (0 in dense models): expert_count experts of
	// NFFExp (expert_feed_forward_length, default NFF/NExpertUsed as
	// llama.cpp), expert_used_count routed per token.
	NExpert     int
	NExpertUsed int
	NFFExp      int

	// Sliding-window attention (gemma2, gemma3, gpt-oss; 0 elsewhere and
	// in a gemma3 without attention.sliding_window): layer il sees only the
	// last SlidingWindow positions when il % SWAPattern < SWAPattern-1
	// (llama.cpp's set_swa_pattern: gemma2 and gpt-oss 2, gemma3 6).
	SlidingWindow int
	SWAPattern    int

	RMSEps         float64 // attention.layer_norm_rms_epsilon (0 if absent)
	RopeFreqBase   float64 // rope.freq_base (default 10000)
	RopeScaling    string  // rope.scaling.type (default "linear", as llama.cpp)
	RopeFreqScale  float64 // 1/rope.scaling.factor (default 1)
	RopeOrigCtx    int     // rope.scaling.original_context_length (default NCtxTrain)
	HasRopeFreqs   bool    // a rope_freqs.weight tensor is present
	TiedOutput     bool    // no output.weight: the head reuses token_embd.weight
	ChatTemplate   bool    // tokenizer.chat_template is present
	TokenizerModel string  // tokenizer.ggml.model
}

// KVBytesPerToken is the KV cache size of one token in one layer when K and V
// are stored with elemBytes bytes per value (2 for F16).
func (s ModelShape) KVBytesPerToken(elemBytes int) int64 {
	return int64(s.HeadDimK+s.HeadDimV) * int64(s.NHeadKV) * int64(elemBytes)
}

func (f *File) metaErr(kind error, format string, a ...any) error {
	return &FormatError{Path: f.Path, Kind: kind, Offset: -1, Detail: fmt.Sprintf(format, a...)}
}

// uintKey reads an integer key that must be a non-negative scalar, or an
// array with one equal value per layer (llama.cpp's get_key_or_arr).
func (f *File) uintKey(key string, required bool, def int) (int, error) {
	v, ok := f.Value(key)
	if !ok {
		if required {
			return 0, f.metaErr(ErrBadMetadata, "the key %s is missing, and every model of this architecture has it", key)
		}
		return def, nil
	}
	if v.Type == Array {
		xs, ok := v.Ints()
		if !ok || len(xs) == 0 {
			return 0, f.metaErr(ErrBadMetadata, "%s is an array of %s, not of integers", key, v.Elem)
		}
		for _, x := range xs[1:] {
			if x != xs[0] {
				return 0, f.metaErr(ErrUnsupported, "has a different %s per layer", key)
			}
		}
		v = Value{Type: Int64, v: xs[0]}
	}
	n, ok := v.Int()
	if !ok {
		return 0, f.metaErr(ErrBadMetadata, "%s is a %s, not an integer", key, v.Type)
	}
	if n < 0 || n > 1<<31-1 {
		return 0, f.metaErr(ErrBadMetadata, "%s is %d, outside 0..2147483647", key, n)
	}
	return int(n), nil
}

func (f *File) floatKey(key string, def float64) (float64, error) {
	v, ok := f.Value(key)
	if !ok {
		return def, nil
	}
	x, ok := v.Float()
	if !ok {
		return 0, f.metaErr(ErrBadMetadata, "%s is a %s, not a float", key, v.Type)
	}
	return x, nil
}

// Shape reads the model's hyper-parameters. Errors are *FormatError
// (ErrBadMetadata for missing or mistyped keys).
func (f *File) Shape() (ModelShape, error) {
	var s ModelShape
	arch, ok := f.String("general.architecture")
	if !ok || arch == "" {
		return s, f.metaErr(ErrBadMetadata, "general.architecture is missing or not a string")
	}
	s.Arch = arch
	s.Name, _ = f.String("general.name")
	s.TokenizerModel, _ = f.String("tokenizer.ggml.model")
	s.ChatTemplate = f.Has("tokenizer.chat_template")
	k := func(name string) string { return arch + "." + name }
	var err error
	geti := func(dst *int, key string, required bool, def int) {
		if err == nil {
			*dst, err = f.uintKey(key, required, def)
		}
	}
	geti(&s.NLayer, k("block_count"), true, 0)
	geti(&s.NEmbd, k("embedding_length"), true, 0)
	geti(&s.NHead, k("attention.head_count"), true, 0)
	geti(&s.NFF, k("feed_forward_length"), false, 0)
	geti(&s.NCtxTrain, k("context_length"), false, 0)
	geti(&s.NExpert, k("expert_count"), false, 0)
	geti(&s.NExpertUsed, k("expert_used_count"), false, 0)
	if err != nil {
		return s, err
	}
	if s.NExpert > 0 && s.NExpertUsed > 0 {
		geti(&s.NFFExp, k("expert_feed_forward_length"), false, 0)
		if err != nil {
			return s, err
		}
		if s.NFFExp == 0 { // llama.cpp's default, for a missing key or 0
			s.NFFExp = s.NFF / s.NExpertUsed
		}
	}
	switch arch {
	case "gemma2": // llama.cpp's default window, and a window of 0 masks everything
		s.SWAPattern = 2
		geti(&s.SlidingWindow, k("attention.sliding_window"), false, 4096)
		if err == nil && s.SlidingWindow == 0 {
			return s, f.metaErr(ErrBadMetadata, "%s is 0; a gemma2 model needs a sliding window", k("attention.sliding_window"))
		}
	case "gemma3":
		if geti(&s.SlidingWindow, k("attention.sliding_window"), false, 0); s.SlidingWindow > 0 {
			s.SWAPattern = 6
		}
	case "gpt-oss": // load_hparams requires the window; a window of 0 masks everything
		s.SWAPattern = 2
		geti(&s.SlidingWindow, k("attention.sliding_window"), true, 0)
		if err == nil && s.SlidingWindow == 0 {
			return s, f.metaErr(ErrBadMetadata, "%s is 0; a gpt-oss model needs a sliding window", k("attention.sliding_window"))
		}
	}
	if err != nil {
		return s, err
	}
	if s.NHead == 0 {
		return s, f.metaErr(ErrBadMetadata, "%s is 0", k("attention.head_count"))
	}
	if s.NEmbd == 0 {
		return s, f.metaErr(ErrBadMetadata, "%s is 0", k("embedding_length"))
	}
	geti(&s.NHeadKV, k("attention.head_count_kv"), false, s.NHead)
	geti(&s.HeadDimK, k("attention.key_length"), false, s.NEmbd/s.NHead)
	geti(&s.HeadDimV, k("attention.value_length"), false, s.NEmbd/s.NHead)
	geti(&s.RopeOrigCtx, k("rope.scaling.original_context_length"), false, s.NCtxTrain)
	if err != nil {
		return s, err
	}
	geti(&s.NRot, k("rope.dimension_count"), false, s.HeadDimK)
	if err != nil {
		return s, err
	}
	if s.NHeadKV == 0 || s.NHead%s.NHeadKV != 0 {
		return s, f.metaErr(ErrBadMetadata, "%d attention heads cannot be shared by %d key/value heads", s.NHead, s.NHeadKV)
	}
	if s.RMSEps, err = f.floatKey(k("attention.layer_norm_rms_epsilon"), 0); err != nil {
		return s, err
	}
	if s.RopeFreqBase, err = f.floatKey(k("rope.freq_base"), 10000); err != nil {
		return s, err
	}
	factor, err := f.floatKey(k("rope.scaling.factor"), 0)
	if err != nil {
		return s, err
	}
	if factor == 0 {
		if factor, err = f.floatKey(k("rope.scale_linear"), 0); err != nil {
			return s, err
		}
	}
	s.RopeFreqScale = 1
	if factor != 0 {
		s.RopeFreqScale = 1 / factor
	}
	s.RopeScaling = "linear"
	if v, ok := f.Value(k("rope.scaling.type")); ok {
		if s.RopeScaling, ok = v.String(); !ok {
			return s, f.metaErr(ErrBadMetadata, "%s is a %s, not a string", k("rope.scaling.type"), v.Type)
		}
	}
	_, s.HasRopeFreqs = f.Tensor("rope_freqs.weight")
	_, hasOutput := f.Tensor("output.weight")
	s.TiedOutput = !hasOutput
	if t, ok := f.Tensor("token_embd.weight"); ok && len(t.Shape) == 2 {
		s.NVocab = int(t.Shape[1])
	} else if v, ok := f.Value("tokenizer.ggml.tokens"); ok {
		s.NVocab = v.Len()
	}
	return s, nil
}

// Range is a byte range [Start, End) of the file.
type Range struct{ Start, End int64 }

// Part is a group of tensors: one layer, the input or the output.
type Part struct {
	Bytes int64
	// ExpertBytes is the part of Bytes in routed experts' weights
	// (IsExpertTensor): a token reads NExpertUsed/NExpert of it.
	ExpertBytes int64
	// ExpertByType splits ExpertBytes by weight type (nil without experts).
	ExpertByType map[Type]int64
	ByType       map[Type]int64
	Tensors      []string // in file order
	Ranges       []Range  // merged, sorted byte ranges of the tensors' data
}

func (p *Part) add(t TensorInfo) {
	if p.ByType == nil {
		p.ByType = map[Type]int64{}
	}
	p.Bytes += t.Size
	if IsExpertTensor(t.Name) {
		p.ExpertBytes += t.Size
		if p.ExpertByType == nil {
			p.ExpertByType = map[Type]int64{}
		}
		p.ExpertByType[t.Type] += t.Size
	}
	p.ByType[t.Type] += t.Size
	p.Tensors = append(p.Tensors, t.Name)
	r := Range{t.Offset, t.Offset + t.Size}
	if n := len(p.Ranges); n > 0 && p.Ranges[n-1].End <= r.Start && r.Start-p.Ranges[n-1].End < 4096 {
		// Adjacent up to alignment padding: one range, so prefetching issues
		// one call per contiguous run.
		p.Ranges[n-1].End = r.End
		return
	}
	p.Ranges = append(p.Ranges, r)
}

// TypeStat counts the tensors of one type.
type TypeStat struct {
	Count int
	Bytes int64
}

// Layout is where the model's bytes are: per layer (tensors "blk.N.*"), the
// input (token_embd.*), the output (output_norm.*, output.*) and the rest
// (rope_freqs and anything else outside a block).
type Layout struct {
	Input  Part
	Output Part // without token_embd even when the output is tied to it
	Other  Part
	Layers []Part
	ByType map[Type]TypeStat
}

// Layout groups the tensors by layer. Layer numbers come from the names; a
// number at or beyond the tensor count (which no real file has) is an error.
func (f *File) Layout() (Layout, error) {
	l := Layout{ByType: map[Type]TypeStat{}}
	for _, t := range f.Tensors {
		st := l.ByType[t.Type]
		st.Count++
		st.Bytes += t.Size
		l.ByType[t.Type] = st
		if rest, ok := strings.CutPrefix(t.Name, "blk."); ok {
			num, _, _ := strings.Cut(rest, ".")
			i, err := strconv.Atoi(num)
			if err == nil && i >= 0 {
				if i >= len(f.Tensors) {
					return l, f.metaErr(ErrBadTensor, "tensor %q names layer %d but the file has only %d tensors", t.Name, i, len(f.Tensors))
				}
				for len(l.Layers) <= i {
					l.Layers = append(l.Layers, Part{})
				}
				l.Layers[i].add(t)
				continue
			}
		}
		switch {
		case strings.HasPrefix(t.Name, "token_embd."):
			l.Input.add(t)
		case strings.HasPrefix(t.Name, "output_norm.") || strings.HasPrefix(t.Name, "output."):
			l.Output.add(t)
		default:
			l.Other.add(t)
		}
	}
	return l, nil
}

// TypesSorted lists the types of a ByType map by descending bytes.
func TypesSorted(m map[Type]TypeStat) []Type {
	ts := make([]Type, 0, len(m))
	for t := range m {
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool {
		if m[ts[i]].Bytes != m[ts[j]].Bytes {
			return m[ts[i]].Bytes > m[ts[j]].Bytes
		}
		return ts[i] < ts[j]
	})
	return ts
}

// WindowRanges returns the merged, sorted file byte ranges a window of layers
// [a, b) reads, plus the input part (token_embd) if withInput and the output
// part (output_norm, output) if withOutput. The "other" part (rope_freqs) is
// always included when present: every layer may read it. Used to prefetch or
// release a window's weights.
func (l Layout) WindowRanges(a, b int, withInput, withOutput bool) []Range {
	var rs []Range
	a, b = max(a, 0), min(b, len(l.Layers))
	for i := a; i < b; i++ {
		rs = append(rs, l.Layers[i].Ranges...)
	}
	if withInput {
		rs = append(rs, l.Input.Ranges...)
	}
	if withOutput {
		rs = append(rs, l.Output.Ranges...)
	}
	rs = append(rs, l.Other.Ranges...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Start < rs[j].Start })
	var out []Range
	for _, r := range rs {
		if n := len(out); n > 0 && r.Start <= out[n-1].End {
			out[n-1].End = max(out[n-1].End, r.End)
			continue
		}
		out = append(out, r)
	}
	return out
}
