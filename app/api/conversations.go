package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"homering/app/api/apitype"
	"homering/app/config"
)

// ConversationsDir is the folder, in the config directory, holding one JSON
// file per conversation (ID.json).
const ConversationsDir = "conversations"

// ErrConversation is a bad conversation ID or body.
var ErrConversation = errors.New("api: conversation")

// validConvID keeps IDs to file-name-safe characters: they name files.
var validConvID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// convStore keeps conversations on disk. Writes are atomic (config.WriteFile).
type convStore struct {
	dir func() string // the config directory
}

func (c *convStore) path(id string) (string, error) {
	if !validConvID.MatchString(id) {
		return "", fmt.Errorf("%w: %q is not a conversation ID (letters, digits, - and _, at most 64)", ErrConversation, id)
	}
	return filepath.Join(c.dir(), ConversationsDir, id+".json"), nil
}

// Get reads one conversation.
func (c *convStore) Get(id string) (apitype.Conversation, error) {
	var v apitype.Conversation
	p, err := c.path(id)
	if err != nil {
		return v, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("%w: %s is damaged: %v", ErrConversation, p, err)
	}
	return v, nil
}

// Put saves a conversation under id.
func (c *convStore) Put(id string, v apitype.Conversation) (apitype.Conversation, error) {
	p, err := c.path(id)
	if err != nil {
		return v, err
	}
	v.ID = id
	if v.Messages == nil {
		v.Messages = []apitype.ConversationMessage{}
	}
	if v.Created.IsZero() {
		v.Created = time.Now()
	}
	v.Updated = time.Now()
	if strings.TrimSpace(v.Title) == "" {
		v.Title = "New chat"
		for _, m := range v.Messages {
			if m.Role == "user" {
				v.Title = firstWords(m.Content, 48)
				break
			}
		}
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return v, err
	}
	b, _ := json.MarshalIndent(v, "", " ")
	return v, config.WriteFile(p, b)
}

// List returns every conversation, newest first.
func (c *convStore) List() ([]apitype.ConversationSummary, error) {
	out := []apitype.ConversationSummary{}
	ents, err := os.ReadDir(filepath.Join(c.dir(), ConversationsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		v, err := c.Get(id)
		if err != nil {
			continue // a damaged file is skipped, not fatal for the list
		}
		out = append(out, apitype.ConversationSummary{ID: v.ID, Title: v.Title, Updated: v.Updated, Messages: len(v.Messages)})
	}
	slices.SortFunc(out, func(a, b apitype.ConversationSummary) int { return b.Updated.Compare(a.Updated) })
	return out, nil
}

// Delete removes a conversation; a missing one is not an error.
func (c *convStore) Delete(id string) error {
	p, err := c.path(id)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// firstWords shortens s to at most n bytes at a word boundary.
func firstWords(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndexByte(s[:n], ' ')
	if cut < n/2 {
		cut = n
	}
	return strings.TrimRight(s[:cut], " ") + "…"
}

func convStatus(err error) int {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return http.StatusNotFound
	case errors.Is(err, ErrConversation):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

func convReply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		msg := sentence(err)
		if errors.Is(err, fs.ErrNotExist) {
			msg = "That conversation does not exist (deleted elsewhere?); pick another."
		}
		writeJSON(w, convStatus(err), apitype.Error{Error: strings.ReplaceAll(msg, "api: ", "")})
		return
	}
	writeJSON(w, http.StatusOK, v)
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
