package problem

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// Every registered problem has the words a person needs, and every code
// constant is registered once.
func TestRegistry(t *testing.T) {
	codes := []Code{NoModel, ModelUnreadable, NoPlan, EngineDied, ModelLoad, ModelChanged, BadRequest, EmptyConversation, ContextFull, NoChat, Settings, DamagedFile,
		SettingsWrite, ChatFailed, ConversationDisk,
		Interface, LinkPort, Advertise, SelfCopy, PeerCopy, ChatAPIPort,
		UnknownPeer, PeerState, PairCode, InvalidSettings, PeerRefused, PeerFailed, BadConversation, NoConversation, Folder}
	seen := map[Code]bool{}
	valid := regexp.MustCompile(`^[a-z][a-z_]*$`)
	for _, s := range All() {
		t.Run(string(s.Code), func(t *testing.T) {
			if seen[s.Code] {
				t.Errorf("registered twice")
			}
			seen[s.Code] = true
			if !valid.MatchString(string(s.Code)) {
				t.Errorf("code %q is not lower_snake_case", s.Code)
			}
			for what, v := range map[string]string{"title": s.Title, "fix": s.Fix} {
				if v == "" || !strings.HasSuffix(v, ".") || strings.ToUpper(v[:1]) != v[:1] {
					t.Errorf("%s %q is not a sentence", what, v)
				}
			}
			if s.Severity != SevError && s.Severity != SevWarning {
				t.Errorf("severity %q", s.Severity)
			}
			switch s.Kind {
			case KindRequest, KindUnavailable, KindUnusable, KindFailed, KindState, KindNotFound, KindConflict, KindDenied, KindPeer:
			default:
				t.Errorf("kind %q", s.Kind)
			}
		})
	}
	for _, c := range codes {
		if !seen[c] {
			t.Errorf("code %q is not registered", c)
		}
	}
	if len(seen) != len(codes) {
		t.Errorf("%d registered, %d code constants listed here: add the new one to this test", len(seen), len(codes))
	}
}

func TestMakeAndError(t *testing.T) {
	p := Make(PeerCopy, "Two running devices announce one ID.", "ABC")
	if p.Code != "peer_copy:ABC" || p.Title != "Two devices share one identity." || p.Fix == "" || p.Severity != "warning" {
		t.Errorf("Make = %+v", p)
	}
	err := fmt.Errorf("chat: %w", New(EmptyConversation, "The conversation is empty; send at least one message."))
	if KindOf(err) != KindRequest || err.Error() != "chat: The conversation is empty; send at least one message." {
		t.Errorf("KindOf = %v, Error = %q", KindOf(err), err)
	}
	if KindOf(errors.New("disk on fire")) != KindFailed {
		t.Error("a plain error is not KindFailed")
	}
	sentinel := errors.New("node: that device is not paired")
	if w := Wrap(PeerState, "That device is not paired.", sentinel); !errors.Is(w, sentinel) || KindOf(w) != KindConflict || w.Error() != "That device is not paired." {
		t.Errorf("Wrap = %v (kind %v), want the sentence over the sentinel, KindConflict", w, KindOf(w))
	}
	if got := Sentence("  the file ends early "); got != "The file ends early." {
		t.Errorf("Sentence = %q", got)
	}
}
