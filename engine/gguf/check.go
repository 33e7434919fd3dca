package gguf

import (
	"fmt"
	"strings"
)

// Supported reports whether Homering's engine runs architecture arch
// (general.architecture). Mistral models say "llama".
func Supported(arch string) bool {
	switch arch {
	case "llama", "qwen2", "qwen3", "qwen3moe", "gemma2", "gemma3", "phi3", "gpt-oss":
		return true
	}
	return false
}

// MoE reports whether the engine runs arch's mixture-of-experts layers
// (routed experts, no shared expert): an expert_count key on any other
// architecture (Mixtral says llama) makes the model unsupported.
func MoE(arch string) bool { return arch == "qwen3moe" || arch == "gpt-oss" }

// IsExpertTensor reports whether a tensor holds routed experts' weights
// (ffn_{gate,up,down}_exps, 3-D: one matrix per expert), of which a token
// reads only the experts its router picks.
func IsExpertTensor(name string) bool {
	return strings.HasSuffix(name, "_exps.weight") || strings.HasSuffix(name, "_exps.bias")
}

type tensorRule struct {
	name     string
	shape    []int64
	optional bool
}

// expectedTensors lists the tensors llama.cpp's loader creates for s
// (llama-model.cpp load_tensors at the pinned version).
func expectedTensors(s ModelShape) []tensorRule {
	e, v, ff := int64(s.NEmbd), int64(s.NVocab), int64(s.NFF)
	q := int64(s.HeadDimK * s.NHead)
	kGQA := int64(s.HeadDimK * s.NHeadKV)
	vGQA := int64(s.HeadDimV * s.NHeadKV)
	rules := []tensorRule{
		{"token_embd.weight", []int64{e, v}, false},
		{"output_norm.weight", []int64{e}, false},
	}
	if s.Arch != "gemma2" { // gemma2's head is always token_embd: an output.weight would be left unused
		rules = append(rules, tensorRule{"output.weight", []int64{e, v}, true})
	}
	if s.Arch == "qwen2" {
		rules = append(rules, tensorRule{"output.bias", []int64{v}, true})
	}
	if s.Arch == "llama" {
		rules = append(rules, tensorRule{"rope_freqs.weight", []int64{int64(s.NRot / 2)}, true})
	}
	if s.Arch == "phi3" { // LongRoPE factors, shared by every layer
		rules = append(rules, tensorRule{"rope_factors_long.weight", []int64{int64(s.NRot / 2)}, true},
			tensorRule{"rope_factors_short.weight", []int64{int64(s.NRot / 2)}, true})
	}
	for i := range s.NLayer {
		b := func(n string) string { return fmt.Sprintf("blk.%d.%s", i, n) }
		oIn := q
		if s.Arch == "qwen2" {
			q, oIn = e, e
		}
		rules = append(rules, tensorRule{b("attn_norm.weight"), []int64{e}, false})
		if s.Arch == "phi3" { // Q, K and V fused, as every phi3 GGUF has them
			rules = append(rules, tensorRule{b("attn_qkv.weight"), []int64{e, q + kGQA + vGQA}, false})
		} else {
			rules = append(rules,
				tensorRule{b("attn_q.weight"), []int64{e, q}, false},
				tensorRule{b("attn_k.weight"), []int64{e, kGQA}, false},
				tensorRule{b("attn_v.weight"), []int64{e, vGQA}, false})
		}
		rules = append(rules, tensorRule{b("attn_output.weight"), []int64{oIn, e}, false})
		if s.Arch == "gpt-oss" { // its FFN norm's name
			rules = append(rules, tensorRule{b("post_attention_norm.weight"), []int64{e}, false})
		} else {
			rules = append(rules, tensorRule{b("ffn_norm.weight"), []int64{e}, false})
		}
		if s.Arch == "phi3" { // gate and up fused in ffn_up
			rules = append(rules,
				tensorRule{b("ffn_down.weight"), []int64{ff, e}, false},
				tensorRule{b("ffn_up.weight"), []int64{e, 2 * ff}, false},
			)
		} else if s.NExpert > 0 {
			ne, fe := int64(s.NExpert), int64(s.NFFExp)
			rules = append(rules,
				tensorRule{b("ffn_gate_inp.weight"), []int64{e, ne}, false},
				tensorRule{b("ffn_gate_exps.weight"), []int64{e, fe, ne}, false},
				tensorRule{b("ffn_down_exps.weight"), []int64{fe, e, ne}, false},
				tensorRule{b("ffn_up_exps.weight"), []int64{e, fe, ne}, false},
			)
			if s.Arch == "gpt-oss" {
				rules = append(rules,
					tensorRule{b("ffn_gate_inp.bias"), []int64{ne}, false},
					tensorRule{b("ffn_gate_exps.bias"), []int64{fe, ne}, false},
					tensorRule{b("ffn_down_exps.bias"), []int64{e, ne}, false},
					tensorRule{b("ffn_up_exps.bias"), []int64{fe, ne}, false},
				)
			}
		} else {
			rules = append(rules,
				tensorRule{b("ffn_gate.weight"), []int64{e, ff}, false},
				tensorRule{b("ffn_down.weight"), []int64{ff, e}, false},
				tensorRule{b("ffn_up.weight"), []int64{e, ff}, false},
			)
		}
		switch s.Arch {
		case "llama":
			rules = append(rules,
				tensorRule{b("attn_q.bias"), []int64{e}, true},
				tensorRule{b("attn_k.bias"), []int64{kGQA}, true},
				tensorRule{b("attn_v.bias"), []int64{vGQA}, true},
				tensorRule{b("attn_output.bias"), []int64{e}, true},
				tensorRule{b("ffn_gate.bias"), []int64{ff}, true},
				tensorRule{b("ffn_down.bias"), []int64{e}, true},
				tensorRule{b("ffn_up.bias"), []int64{ff}, true},
			)
		case "qwen2":
			rules = append(rules,
				tensorRule{b("attn_q.bias"), []int64{e}, true},
				tensorRule{b("attn_k.bias"), []int64{kGQA}, true},
				tensorRule{b("attn_v.bias"), []int64{vGQA}, true},
			)
		case "qwen3", "qwen3moe", "gemma3":
			rules = append(rules,
				tensorRule{b("attn_q_norm.weight"), []int64{int64(s.HeadDimK)}, false},
				tensorRule{b("attn_k_norm.weight"), []int64{int64(s.HeadDimK)}, false},
			)
		case "gpt-oss":
			rules = append(rules,
				tensorRule{b("attn_q.bias"), []int64{q}, false},
				tensorRule{b("attn_k.bias"), []int64{kGQA}, false},
				tensorRule{b("attn_v.bias"), []int64{vGQA}, false},
				tensorRule{b("attn_output.bias"), []int64{e}, false},
				tensorRule{b("attn_sinks.weight"), []int64{int64(s.NHead)}, false},
			)
		}
		if s.Arch == "gemma2" || s.Arch == "gemma3" {
			rules = append(rules,
				tensorRule{b("post_attention_norm.weight"), []int64{e}, false},
				tensorRule{b("post_ffw_norm.weight"), []int64{e}, false},
			)
		}
	}
	return rules
}

// sameShape compares as llama.cpp's check_tensor_dims: missing trailing
// dimensions count as 1.
func sameShape(got, want []int64) bool {
	for i := range maxDims {
		g, w := int64(1), int64(1)
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return false
		}
	}
	return true
}

// checkShape is what CheckTensors and CheckSliceTensors check before any
// tensor: a supported architecture and hyper-parameters llama.cpp's loader
// accepts.
func (f *File) checkShape(s ModelShape) error {
	if !Supported(s.Arch) {
		return f.metaErr(ErrUnsupported, "uses architecture %s", s.Arch)
	}
	if s.NExpert > 0 && !MoE(s.Arch) {
		return f.metaErr(ErrUnsupported, "is a mixture-of-experts model (%d experts)", s.NExpert)
	}
	if MoE(s.Arch) {
		if err := f.checkExperts(s); err != nil {
			return err
		}
	} else if s.NFF == 0 { // phi3's too: ffn_up is [n_embd, 2 n_ff]
		return f.metaErr(ErrBadMetadata, "the model has feed-forward length 0")
	}
	if s.NLayer == 0 || s.NVocab == 0 {
		return f.metaErr(ErrBadMetadata, "the model has %d layers and %d tokens; neither may be 0", s.NLayer, s.NVocab)
	}
	if s.Arch == "llama" && s.NRot != s.HeadDimK {
		return f.metaErr(ErrBadMetadata, "rope.dimension_count is %d but the head dimension is %d; llama models rotate whole heads", s.NRot, s.HeadDimK)
	}
	if s.Arch == "qwen2" && s.HeadDimK*s.NHead != s.NEmbd {
		return f.metaErr(ErrBadMetadata, "qwen2 needs heads x head dimension (%d x %d) to equal the embedding length %d", s.NHead, s.HeadDimK, s.NEmbd)
	}
	return nil
}

// checkExperts checks a MoE model's expert keys as llama.cpp's
// load_hparams asserts them (and refuses expert groups, which qwen3moe
// models do not use and the engine does not build).
func (f *File) checkExperts(s ModelShape) error {
	switch {
	case s.NExpert == 0 || s.NExpert > MaxExperts:
		return f.metaErr(ErrBadMetadata, "%s.expert_count is %d; a %s model has 1 to %d experts", s.Arch, s.NExpert, s.Arch, MaxExperts)
	case s.NExpertUsed == 0 || s.NExpertUsed > s.NExpert:
		return f.metaErr(ErrBadMetadata, "%s.expert_used_count is %d; it must be 1 to the %d experts", s.Arch, s.NExpertUsed, s.NExpert)
	case s.NFFExp == 0:
		return f.metaErr(ErrBadMetadata, "%s.expert_feed_forward_length is missing and feed_forward_length does not give it", s.Arch)
	}
	if g, ok := f.Int(s.Arch + ".expert_group_count"); ok && g > 1 {
		return f.metaErr(ErrUnsupported, "routes experts in %d groups", g)
	}
	return nil
}

// MaxExperts is llama.cpp's LLAMA_MAX_EXPERTS.
const MaxExperts = 512

// CheckTensors checks that the file is a model Homering's engine can run and
// that llama.cpp would load: a supported architecture, every required
// tensor present with the shape llama.cpp expects for s, and no tensor the
// loader would not use. Call it (after Shape) before handing the file to any
// C code: it turns what would be a C abort or a wrong result into a
// *FormatError.
func (f *File) CheckTensors(s ModelShape) error {
	if err := f.checkShape(s); err != nil {
		return err
	}
	used := map[string]bool{}
	for _, r := range expectedTensors(s) {
		t, ok := f.Tensor(r.name)
		if !ok {
			if r.optional {
				continue
			}
			return f.metaErr(ErrBadTensor, "tensor %s is missing", r.name)
		}
		if !sameShape(t.Shape, r.shape) {
			return f.metaErr(ErrBadTensor, "tensor %s has shape %v where a %s model with these hyper-parameters has %v", r.name, t.Shape, s.Arch, r.shape)
		}
		used[r.name] = true
	}
	for _, t := range f.Tensors {
		if !used[t.Name] {
			return f.metaErr(ErrUnsupported, "has tensor %s, which a %s model does not have", t.Name, s.Arch)
		}
	}
	return nil
}
