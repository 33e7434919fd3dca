package agent

import (
	"os"
	"sync"
	"time"

	"homering/app/config"
	"homering/engine/head"
)

// draftCache remembers the draft picked for each chat model, so that the
// model sources are scanned and headers read once, not per chat: until the
// setting, the model file or the picked draft's file changes.
type draftCache struct {
	mu     sync.Mutex
	picked map[string]draftPick // by chat model path
}

type draftPick struct {
	setting string
	size    int64
	mod     time.Time
	draft   string
}

// draftFor is the speculative draft of chats on the model at path under
// the draft setting (config.Settings.Draft): none when off, the setting's
// file when it names one, else one picked among the model sources
// (engine/head.PickDraft: the same vocabulary, at most a quarter of the
// size); "" for none. The engine speculates greedy requests only.
func (b *Agent) draftFor(path, setting string) string {
	switch setting {
	case config.DraftOff:
		return ""
	case "":
	default:
		return setting
	}
	st, err := os.Stat(path)
	if err != nil {
		return ""
	}
	c := &b.drafts
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.picked[path]; ok && p.setting == setting && p.size == st.Size() && p.mod.Equal(st.ModTime()) {
		if _, err := os.Stat(p.draft); p.draft == "" || err == nil {
			return p.draft
		}
	}
	home, _ := os.UserHomeDir()
	set := b.settings()
	var candidates []string
	ScanModels(home, set.ModelDir, func(f ModelFile, _ string) bool {
		candidates = append(candidates, f.Path)
		return len(candidates) < 200
	})
	draft := head.PickDraft(path, candidates)
	if c.picked == nil {
		c.picked = map[string]draftPick{}
	}
	c.picked[path] = draftPick{setting: setting, size: st.Size(), mod: st.ModTime(), draft: draft}
	if draft != "" {
		b.log.Info("speculative draft picked", "model", path, "draft", draft)
	}
	return draft
}
