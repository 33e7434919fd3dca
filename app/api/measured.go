package api

import (
	"context"
	"sync"
	"time"

	"homering/app/api/apitype"
)

// measuredChat records the decode speed of every finished generation (from
// the UI or any compatible API), so the device map can show a measured
// ms/token beside Halda's prediction. On the single-device path the head
// runs every layer, so its measurement is the whole token.
type measuredChat struct {
	Chatter
	mu   sync.Mutex // guards last
	last *measurement
}

type measurement struct {
	msPerToken float64
	at         time.Time
}

func (m *measuredChat) Chat(ctx context.Context, req apitype.ChatRequest, emit func(string) error) (apitype.ChatStats, error) {
	st, err := m.Chatter.Chat(ctx, req, emit)
	if err == nil && st.TokensPerSecond > 0 && st.CompletionTokens > 1 {
		m.mu.Lock()
		m.last = &measurement{msPerToken: 1000 / st.TokensPerSecond, at: time.Now()}
		m.mu.Unlock()
	}
	return st, err
}

// measured returns the last measured ms/token, or nil.
func (m *measuredChat) measured() *float64 {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		return nil
	}
	v := m.last.msPerToken
	return &v
}
