package gguf

// Value returns the metadata value of key.
func (f *File) Value(key string) (Value, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return Value{}, false
	}
	return f.KV[i].Value, true
}

// Has reports whether the metadata has key.
func (f *File) Has(key string) bool {
	_, ok := f.kvIndex[key]
	return ok
}

// String returns the string value of key; ok is false if it is missing or
// not a string.
func (f *File) String(key string) (string, bool) {
	v, ok := f.Value(key)
	if !ok {
		return "", false
	}
	return v.String()
}

// Int returns the integer value of key, whatever its width and signedness.
func (f *File) Int(key string) (int64, bool) {
	v, ok := f.Value(key)
	if !ok {
		return 0, false
	}
	return v.Int()
}

// Float returns the float32 or float64 value of key.
func (f *File) Float(key string) (float64, bool) {
	v, ok := f.Value(key)
	if !ok {
		return 0, false
	}
	return v.Float()
}

// Bool returns the bool value of key.
func (f *File) Bool(key string) (bool, bool) {
	v, ok := f.Value(key)
	if !ok {
		return false, false
	}
	return v.Bool()
}

// Strings returns the string array value of key.
func (f *File) Strings(key string) ([]string, bool) {
	v, ok := f.Value(key)
	if !ok {
		return nil, false
	}
	return v.Strings()
}

// Ints returns the integer array value of key as []int64.
func (f *File) Ints(key string) ([]int64, bool) {
	v, ok := f.Value(key)
	if !ok {
		return nil, false
	}
	return v.Ints()
}

// Floats returns the float array value of key as []float64.
func (f *File) Floats(key string) ([]float64, bool) {
	v, ok := f.Value(key)
	if !ok {
		return nil, false
	}
	return v.Floats()
}

// Tensor returns the tensor called name.
func (f *File) Tensor(name string) (TensorInfo, bool) {
	i, ok := f.tensorIndex[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.Tensors[i], true
}
