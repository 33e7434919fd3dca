package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
)

// builder writes GGUF bytes by hand, so tests can break any field.
type builder struct{ bytes.Buffer }

func (b *builder) u32(v uint32) *builder {
	_ = binary.Write(&b.Buffer, binary.LittleEndian, v) // a fixed-size value into memory cannot fail
	return b
}

func (b *builder) u64(v uint64) *builder {
	_ = binary.Write(&b.Buffer, binary.LittleEndian, v) // a fixed-size value into memory cannot fail
	return b
}

func (b *builder) str(s string) *builder {
	b.u64(uint64(len(s)))
	b.WriteString(s)
	return b
}

func (b *builder) header(version uint32, nTensors, nKV uint64) *builder {
	b.WriteString("GGUF")
	return b.u32(version).u64(nTensors).u64(nKV)
}

func (b *builder) kvU32(key string, v uint32) *builder {
	return b.str(key).u32(uint32(Uint32)).u32(v)
}

func (b *builder) kvF32(key string, v float32) *builder {
	return b.str(key).u32(uint32(Float32)).u32(math.Float32bits(v))
}

func (b *builder) kvStr(key, v string) *builder {
	return b.str(key).u32(uint32(String)).str(v)
}

func (b *builder) tensor(name string, typ Type, offset uint64, shape ...uint64) *builder {
	b.str(name).u32(uint32(len(shape)))
	for _, d := range shape {
		b.u64(d)
	}
	return b.u32(uint32(typ)).u64(offset)
}

// pad aligns the buffer to 32 bytes (the default alignment).
func (b *builder) pad() *builder {
	for b.Len()%32 != 0 {
		b.WriteByte(0)
	}
	return b
}

func (b *builder) zeros(n int) *builder {
	b.Write(make([]byte, n))
	return b
}

// tinyModel is a valid two-tensor llama-like file.
func tinyModel() []byte {
	b := &builder{}
	b.header(3, 2, 3)
	b.kvStr("general.architecture", "llama")
	b.kvU32("llama.block_count", 1)
	b.kvF32("llama.attention.layer_norm_rms_epsilon", 1e-5)
	b.tensor("token_embd.weight", TypeF32, 0, 4, 2)
	b.tensor("blk.0.attn_norm.weight", TypeF32, 32, 4)
	b.pad().zeros(32 + 16)
	return b.Bytes()
}
