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

// replyParse is how a reply is split on its way to an API: its thinking
// first (think, nil when the model's template has none), so that no
// thinking ever reaches the tool parser or the answer; then the answer's
// tool calls (tools, nil without tools). Both nil: the reply passes
// through as the engine gave it.
type replyParse struct {
	think *agent.ThinkParser
	tools *agent.ToolParser
	// dropThinking: the request asked for no reasoning (think false), so
	// what a model reasons anyway (a template that forces it) is left out.
	dropThinking bool
}

// runTools runs req, streaming the answer through emit and the thinking
// through thought (dropped when thought is nil), and returns the calls the
// reply made.
func (s *Server) runTools(ctx context.Context, req apitype.ChatRequest, rp replyParse, emit, thought func(string) error) (apitype.ChatStats, []apitype.ToolCall, error) {
	if rp.dropThinking {
		thought = nil
	}
	answer := emit
	if p := rp.tools; p != nil {
		answer = func(t string) error {
			if c := p.Feed(t); c != "" {
				return emit(c)
			}
			return nil
		}
	}
	split := func(th, a string) error {
		if th != "" && thought != nil {
			if err := thought(th); err != nil {
				return err
			}
		}
		if a != "" {
			return answer(a)
		}
		return nil
	}
	feed := answer
	if rp.think != nil {
		feed = func(t string) error { return split(rp.think.Feed(t)) }
	}
	st, err := s.run(ctx, req, feed)
	if err != nil {
		return st, nil, err
	}
	if rp.think != nil {
		if err := split(rp.think.Finish()); err != nil {
			return st, nil, err
		}
	}
	if rp.tools == nil {
		return st, nil, nil
	}
	rest, calls := finishTools(rp.tools)
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
