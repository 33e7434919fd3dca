package api

import (
	"errors"
	"net/http"

	"homering/app/agent"
	"homering/app/api/apitype"
	"homering/app/problem"
)

// ConversationsDir is the folder, in the config directory, holding one JSON
// file per conversation (ID.json).
const ConversationsDir = agent.ConversationsDir

// convReply answers as reply does, but a failure that is not a problem
// (the disk's) is 500: the conversations are on this computer, no gateway.
func convReply(w http.ResponseWriter, v any, err error) {
	var pe *problem.Error
	if err != nil && !errors.As(err, &pe) {
		writeJSON(w, http.StatusInternalServerError, apitype.Error{Error: sentence(err)})
		return
	}
	reply(w, v, err)
}

func (u *ui) listConversations(w http.ResponseWriter, r *http.Request) {
	l, err := u.conv.List()
	convReply(w, l, err)
}

func (u *ui) getConversation(w http.ResponseWriter, r *http.Request) {
	v, err := u.conv.Get(r.PathValue("id"))
	convReply(w, v, err)
}

func (u *ui) putConversation(w http.ResponseWriter, r *http.Request) {
	var v apitype.Conversation
	if !decode(w, r, &v) {
		return
	}
	id := r.PathValue("id")
	if old, err := u.conv.Get(id); err == nil {
		v.Created = old.Created
	}
	v, err := u.conv.Put(id, v)
	convReply(w, v, err)
}

func (u *ui) deleteConversation(w http.ResponseWriter, r *http.Request) {
	convReply(w, struct{}{}, u.conv.Delete(r.PathValue("id")))
}
