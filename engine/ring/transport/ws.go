package transport

import (
	"io"

	"github.com/gorilla/websocket"
)

// wsStream turns a websocket into a byte stream: each Write is one binary
// message, and Read continues across message boundaries.
type wsStream struct {
	ws *websocket.Conn
	r  io.Reader // current message; nil between messages
}

func (s *wsStream) Read(p []byte) (int, error) {
	for {
		if s.r == nil {
			typ, r, err := s.ws.NextReader()
			if err != nil {
				if websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway) {
					return 0, io.EOF
				}
				return 0, err
			}
			if typ != websocket.BinaryMessage {
				continue // text or other messages are not ours; skip them
			}
			s.r = r
		}
		n, err := s.r.Read(p)
		if err == io.EOF {
			s.r = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

func (s *wsStream) Write(p []byte) (int, error) {
	if err := s.ws.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (s *wsStream) Close() error { return s.ws.Close() }
