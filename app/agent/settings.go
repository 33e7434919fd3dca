package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"homering/app/api/apitype"
	"homering/app/config"
	"homering/app/problem"
)

// The settings (settings.json, app/config), the UI's conversations and the
// model folder's Browse, as the API serves them.

// settingsCache is the settings as the API last read or saved them.
type settingsCache struct {
	mu sync.Mutex       // guards f
	f  *config.Settings // nil until first read
}

// toAPI is the settings file as the API shows it, with the device's name
// (kept in config.json).
func toAPI(f config.Settings, name string) apitype.Settings {
	return apitype.Settings{Name: name, ModelDir: f.ModelDir, Model: f.Model, ContextTokens: f.ContextTokens,
		MemoryBudget: f.MemoryBudget, Expose: f.Expose, APIKey: f.APIKey, RingKeepSeconds: f.RingKeepSeconds, GPU: f.GPU,
		APIPort: f.APIPort, Draft: f.Draft}
}

func fromAPI(s apitype.Settings) config.Settings {
	return config.Settings{ModelDir: s.ModelDir, Model: s.Model, ContextTokens: s.ContextTokens,
		MemoryBudget: s.MemoryBudget, Expose: s.Expose, APIKey: s.APIKey, RingKeepSeconds: s.RingKeepSeconds, GPU: s.GPU,
		APIPort: s.APIPort, Draft: s.Draft}
}

// LoadSettings reads the settings in config directory dir (settings.json)
// as the API shows them, without the device's name; a missing file gives
// the defaults.
func LoadSettings(dir string) (apitype.Settings, error) {
	f, err := config.LoadSettings(dir)
	if err != nil {
		return apitype.Settings{}, err
	}
	return toAPI(f, ""), nil
}

// DefaultSettings are the settings of a device that saved none.
func DefaultSettings() apitype.Settings { return toAPI(config.DefaultSettings(), "") }

// ReadSettings reads settings.json now (the defaults when it cannot be
// read: the agent runs on those then too), without the device's name.
func (b *Agent) ReadSettings() apitype.Settings {
	s, err := LoadSettings(b.Status().ConfigDir)
	if err != nil {
		return DefaultSettings()
	}
	return s
}

// Settings are the settings with this device's name: read from
// settings.json once, then as SaveSettings last saved them.
func (b *Agent) Settings() (apitype.Settings, error) {
	f, err := b.savedSettings()
	if err != nil {
		return apitype.Settings{}, err
	}
	return toAPI(f, b.Status().Device.Name), nil
}

func (b *Agent) savedSettings() (config.Settings, error) {
	c := &b.apiSet
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		f, err := config.LoadSettings(b.Status().ConfigDir)
		if err != nil {
			return config.Settings{}, unreadableSettings(err)
		}
		c.f = &f
	}
	return *c.f, nil
}

// SaveSettings saves a settings change: the name trimmed and ModelDir's
// ~ expanded, validated (one sentence per field: problem InvalidSettings),
// the device renamed, settings.json written. It returns the settings
// before (the defaults when they could not be read) and after, both with
// this device's name.
func (b *Agent) SaveSettings(s apitype.Settings) (before, after apitype.Settings, err error) {
	old, lerr := b.savedSettings()
	if lerr != nil {
		old = config.DefaultSettings()
	}
	s.Name = strings.TrimSpace(s.Name)
	s.ModelDir = config.ExpandHome(strings.TrimSpace(s.ModelDir)) // ~/models, as a shell would
	if err := validateSettings(s); err != nil {
		return before, after, problem.Wrap(problem.InvalidSettings, strings.TrimPrefix(err.Error(), config.ErrSettings.Error()+": "), err)
	}
	st := b.Status()
	before = toAPI(old, st.Device.Name)
	if s.Name != st.Device.Name {
		if err := b.SetName(s.Name); err != nil {
			if !errors.As(err, new(*fs.PathError)) {
				return before, after, err
			}
			return before, after, problem.Wrap(problem.SettingsWrite,
				fmt.Sprintf("The device name cannot be saved to %s (%v).", filepath.Join(st.ConfigDir, config.FileName), cause(err)), err)
		}
	}
	f := fromAPI(s)
	if err := config.SaveSettings(st.ConfigDir, f); err != nil {
		return before, after, problem.Wrap(problem.SettingsWrite,
			fmt.Sprintf("The settings cannot be saved to %s (%v).", filepath.Join(st.ConfigDir, config.SettingsFile), cause(err)), err)
	}
	b.apiSet.mu.Lock()
	b.apiSet.f = &f
	b.apiSet.mu.Unlock()
	return before, toAPI(f, b.Status().Device.Name), nil
}

// unreadableSettings is config.LoadSettings's error as problem Settings:
// its text already names the file and says what to do.
func unreadableSettings(err error) error {
	return problem.Wrap(problem.Settings, problem.Sentence(err.Error()), err)
}

// validateSettings checks a settings change; every problem is one sentence.
func validateSettings(s apitype.Settings) error {
	err := fromAPI(s).Validate()
	if len(s.Name) > 63 {
		const long = "The device name is longer than 63 bytes; choose a shorter one."
		if err == nil {
			return fmt.Errorf("%w: %s", config.ErrSettings, long)
		}
		return fmt.Errorf("%w: %s %s", config.ErrSettings, long, strings.TrimPrefix(err.Error(), config.ErrSettings.Error()+": "))
	}
	return err
}

// ConversationsDir is the folder, in the config directory, holding one JSON
// file per conversation (ID.json).
const ConversationsDir = "conversations"

// The words that open a bad conversation ID's or a damaged file's sentence
// (the API used to send "Api: conversation: " before them: a prefix that
// was meant to be cut and never was).
const convSaid = "The conversation "

// validConvID keeps IDs to file-name-safe characters: they name files.
var validConvID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Conversations keeps the UI's conversations on disk, in the config
// directory. Writes are atomic (config.WriteFile). Its errors are problems:
// a bad ID or a damaged file (KindRequest), a missing conversation
// (KindNotFound), the disk's (ConversationDisk).
type Conversations struct {
	dir func() string // the config directory
}

// Conversations is the UI's conversation store.
func (b *Agent) Conversations() *Conversations {
	return &Conversations{dir: func() string { return b.Status().ConfigDir }}
}

func (c *Conversations) path(id string) (string, error) {
	if !validConvID.MatchString(id) {
		return "", problem.New(problem.BadConversation, fmt.Sprintf("%s%q is not a conversation ID (letters, digits, - and _, at most 64).", convSaid, id))
	}
	return filepath.Join(c.dir(), ConversationsDir, id+".json"), nil
}

// Get reads one conversation.
func (c *Conversations) Get(id string) (apitype.Conversation, error) {
	var v apitype.Conversation
	p, err := c.path(id)
	if err != nil {
		return v, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return v, problem.Wrap(problem.NoConversation, "That conversation does not exist (deleted elsewhere?); pick another.", err)
	}
	if err != nil {
		return v, c.diskProblem(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, problem.New(problem.BadConversation, said(fmt.Errorf("%s%s is damaged: %v", convSaid, p, err)))
	}
	return v, nil
}

// Put saves a conversation under id.
func (c *Conversations) Put(id string, v apitype.Conversation) (apitype.Conversation, error) {
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
		return v, c.diskProblem(err)
	}
	b, _ := json.MarshalIndent(v, "", " ")
	return v, c.diskProblem(config.WriteFile(p, b))
}

// List returns every conversation, newest first.
func (c *Conversations) List() ([]apitype.ConversationSummary, error) {
	out := []apitype.ConversationSummary{}
	ents, err := os.ReadDir(filepath.Join(c.dir(), ConversationsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, c.diskProblem(err)
	}
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		v, err := c.Get(id)
		var pe *problem.Error
		if errors.As(err, &pe) && pe.Code == problem.BadConversation {
			// A damaged file stays listed (and on disk): opening it says
			// what is wrong with it, rather than the conversation
			// vanishing without a word.
			var mod time.Time
			if fi, err := e.Info(); err == nil {
				mod = fi.ModTime()
			}
			out = append(out, apitype.ConversationSummary{ID: id, Title: "Damaged: " + e.Name(), Updated: mod})
			continue
		}
		if err != nil {
			continue // gone since ReadDir, or an invalid ID
		}
		out = append(out, apitype.ConversationSummary{ID: v.ID, Title: v.Title, Updated: v.Updated, Messages: len(v.Messages)})
	}
	slices.SortFunc(out, func(a, b apitype.ConversationSummary) int { return b.Updated.Compare(a.Updated) })
	return out, nil
}

// Delete removes a conversation; a missing one is not an error.
func (c *Conversations) Delete(id string) error {
	p, err := c.path(id)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return c.diskProblem(err)
	}
	return nil
}

// diskProblem is a conversation file's read or write failure as problem
// ConversationDisk (nil stays nil).
func (c *Conversations) diskProblem(err error) error {
	if err == nil {
		return nil
	}
	return problem.Wrap(problem.ConversationDisk,
		fmt.Sprintf("The conversations folder %s cannot be read or written (%v).", filepath.Join(c.dir(), ConversationsDir), cause(err)), err)
}

// cause is the innermost error of err's chain ("permission denied"): the
// sentence around it names the file.
func cause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
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

// Folders lists the folders inside path p of this computer (hidden ones
// left out) with how many GGUFs it holds: the model folder's Browse. "~"
// is the home folder.
func Folders(p string) (apitype.Folders, error) {
	p = strings.TrimSpace(p)
	if p == "" {
		p = "~"
	}
	abs, err := filepath.Abs(config.ExpandHome(p))
	if err != nil {
		return apitype.Folders{}, problem.New(problem.Folder, said(fmt.Errorf("%q is not a folder path; type a folder such as ~/models", p)))
	}
	es, err := os.ReadDir(abs)
	if err != nil {
		return apitype.Folders{}, problem.Wrap(problem.Folder, said(fmt.Errorf("cannot open the folder %s (%v); pick another folder", abs, unwrapPath(err))), err)
	}
	out := apitype.Folders{Path: abs, Folders: []string{}}
	if parent := filepath.Dir(abs); parent != abs {
		out.Parent = parent
	}
	for _, e := range es {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		isDir := e.IsDir()
		if e.Type()&os.ModeSymlink != 0 {
			st, err := os.Stat(filepath.Join(abs, name))
			isDir = err == nil && st.IsDir()
		}
		switch {
		case isDir:
			out.Folders = append(out.Folders, name)
		case strings.EqualFold(filepath.Ext(name), ".gguf"):
			out.GGUFs++
		}
	}
	sort.Slice(out.Folders, func(i, j int) bool { return strings.ToLower(out.Folders[i]) < strings.ToLower(out.Folders[j]) })
	return out, nil
}

// unwrapPath is an *os.PathError's cause alone ("permission denied"): the
// sentence names the folder.
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
