package api

import (
	"context"
	"errors"

	"homering/app/agent"
	"homering/app/api/apitype"
)

// Tool calling on the compatible APIs: the agent renders a request with
// tools by the model's template family (app/agent/tools.go); here its
// reply's calls take the API's shape.

// finishTools ends a parsed reply: the content still held and the calls,
// each with an id (newID's "call_…" where the model gave none).
func finishTools(p *agent.ToolParser) (rest string, calls []apitype.ToolCall) {
	rest, cs := p.Finish()
	for _, c := range cs {
		id := c.ID
		if id == "" {
			id = newID("call_")
		}
		calls = append(calls, apitype.ToolCall{ID: id, Name: c.Name, Arguments: string(c.Arguments)})
	}
	return rest, calls
}

// runTools runs req, streaming the content through emit (parsed by p when
// not nil), and returns the calls the reply made.
func (s *Server) runTools(ctx context.Context, req apitype.ChatRequest, p *agent.ToolParser, emit func(string) error) (apitype.ChatStats, []apitype.ToolCall, error) {
	if p == nil {
		st, err := s.run(ctx, req, emit)
		return st, nil, err
	}
	st, err := s.run(ctx, req, func(t string) error {
		if c := p.Feed(t); c != "" {
			return emit(c)
		}
		return nil
	})
	if err != nil {
		return st, nil, err
	}
	rest, calls := finishTools(p)
	if rest != "" {
		if err := emit(rest); err != nil {
			return st, nil, err
		}
	}
	return st, calls, nil
}

// isToolsError says whether err is a tool request the model cannot take.
func isToolsError(err error) (string, bool) {
	var te *agent.ToolsError
	if errors.As(err, &te) {
		return te.Error(), true
	}
	return "", false
}
