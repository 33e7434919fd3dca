package api

import (
	"net/http"

	"homering/app/agent"
	"homering/app/api/apitype"
)

// ConversationsDir is the folder, in the config directory, holding one JSON
// file per conversation (ID.json).
const ConversationsDir = agent.ConversationsDir

func (u *ui) listConversations(w http.ResponseWriter, r *http.Request) {
	l, err := u.conv.List()
	reply(w, l, err)
}

func (u *ui) getConversation(w http.ResponseWriter, r *http.Request) {
	v, err := u.conv.Get(r.PathValue("id"))
	reply(w, v, err)
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
	reply(w, v, err)
}

func (u *ui) deleteConversation(w http.ResponseWriter, r *http.Request) {
	reply(w, struct{}{}, u.conv.Delete(r.PathValue("id")))
}
