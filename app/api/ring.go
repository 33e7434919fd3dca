package api

import (
	"net/http"

	"homering/app/api/apitype"
)

// RingReporter is implemented by a Chatter that runs rings (app/agent/chat.go):
// GET /api/v1/ring shows its last ring (homering status).
type RingReporter interface {
	RingStatus() apitype.RingStatus
}

func (s *Server) ringStatus(w http.ResponseWriter, r *http.Request) {
	if rs := s.ringReport(); rs != nil {
		reply(w, rs, nil)
		return
	}
	reply(w, apitype.RingStatus{Note: "This agent runs no engine."}, nil)
}

// ringReport is the chat backend's ring status (also in the live
// snapshots), or nil when it runs no rings.
func (s *Server) ringReport() *apitype.RingStatus {
	rr, ok := s.backend().(RingReporter)
	if !ok {
		return nil
	}
	rs := rr.RingStatus()
	return &rs
}
