package node

import "homering/app/api/apitype"

// SetProblem shows p in Status until ClearProblem(p.Code), for services the
// node does not own, such as the engine child's supervisor (app/agent/chat.go).
// Watchers get a "problem" event.
func (n *Node) SetProblem(p apitype.Problem) {
	n.setProblem(p)
	n.publish(apitype.Event{Kind: "problem", Reason: p.Code})
}

// ClearProblem removes the problem with this code, if shown.
func (n *Node) ClearProblem(code string) {
	n.mu.Lock()
	_, shown := n.problems[code]
	n.mu.Unlock()
	if shown {
		n.clearProblem(code)
		n.publish(apitype.Event{Kind: "problem", Reason: code})
	}
}
