package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"homering/app/api/apitype"
)

// ChatActive says whether the agent is generating and with which model.
func (c *Client) ChatActive(ctx context.Context) (apitype.ChatActive, error) {
	return get[apitype.ChatActive](ctx, c, "/api/v1/chat/active")
}

// StopChat stops the generation of a conversation ("": all).
func (c *Client) StopChat(ctx context.Context, conversationID string) (apitype.ChatStopped, error) {
	return post[apitype.ChatStopped](ctx, c, "/api/v1/chat/stop", apitype.ChatStopRequest{ConversationID: conversationID})
}

// Chat sends req to POST /api/v1/chat and calls onToken for each streamed
// piece of text; it returns the final stats, or the error event's sentence.
func (c *Client) Chat(ctx context.Context, req apitype.ChatRequest, onToken func(string)) (apitype.ChatStats, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return apitype.ChatStats{}, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Info.URL+"/api/v1/chat", bytes.NewReader(b))
	if err != nil {
		return apitype.ChatStats{}, err
	}
	hr.Header.Set("Authorization", "Bearer "+c.Info.Token)
	hr.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(hr)
	if err != nil {
		return apitype.ChatStats{}, fmt.Errorf("%w (%v)", ErrNoAgent, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var e apitype.Error
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return apitype.ChatStats{}, &APIError{Status: resp.StatusCode, Text: e.Error}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			event = name
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		switch event {
		case "token":
			var t apitype.ChatToken
			if err := json.Unmarshal([]byte(data), &t); err != nil {
				return apitype.ChatStats{}, err
			}
			if t.Text != "" { // a piece of thinking: the answer alone is printed
				onToken(t.Text)
			}
		case "done":
			var d apitype.ChatDone
			err := json.Unmarshal([]byte(data), &d)
			return d.Stats, err
		case "error":
			var e apitype.Error
			_ = json.Unmarshal([]byte(data), &e)
			return apitype.ChatStats{}, &APIError{Status: http.StatusInternalServerError, Text: e.Error}
		}
	}
	if err := sc.Err(); err != nil {
		return apitype.ChatStats{}, err
	}
	return apitype.ChatStats{}, fmt.Errorf("client: the chat stream ended without a result")
}
