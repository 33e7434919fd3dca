package problem

import (
	"errors"
	"slices"
	"strings"

	"homering/app/api/apitype"
)

// Code names a kind of problem. Its value is seen by the UI, the CLI, the
// tray and API clients: never rename one.
type Code string

// The codes. A problem about one device of many (PeerCopy) is shown per
// device: Make's instance suffix keeps them apart.
const (
	NoModel           Code = "no_model"           // no model selected
	ModelUnreadable   Code = "model_unreadable"   // the selected file is no usable GGUF
	NoPlan            Code = "plan"               // Halda finds no plan on these devices
	EngineDied        Code = "engine"             // the engine child died
	ModelLoad         Code = "model"              // the engine cannot load the model
	ModelChanged      Code = "model_changed"      // the model file changed on disk while the engine used it
	BadRequest        Code = "bad_request"        // a chat request the engine refuses
	EmptyConversation Code = "empty_conversation" // a chat without messages
	ContextFull       Code = "context_full"       // a prompt the context cannot hold, even with old turns left out
	NoChat            Code = "no_chat"            // an agent built without an engine
	Settings          Code = "settings"           // settings.json cannot be read
	DamagedFile       Code = "damaged_file"       // a config file the agent could not read at its start and set aside
	SettingsWrite     Code = "settings_write"     // settings.json cannot be written
	ChatFailed        Code = "chat_failed"        // the engine failed otherwise: not died, no load or request refused
	Interface         Code = "interface"          // the chosen network interface is unusable
	LinkPort          Code = "link_port"          // the link listener cannot listen
	Advertise         Code = "advertise"          // mDNS advertising failed
	SelfCopy          Code = "self_copy"          // another device runs with this one's identity
	PeerCopy          Code = "peer_copy"          // two peers run with one identity
	ChatAPIPort       Code = "chat_api_port"      // the compatible APIs cannot listen on their port

	// A request about a peer, pairing or the settings that failed.
	UnknownPeer      Code = "unknown_peer"      // the device named is not known, or has no address
	PeerState        Code = "peer_state"        // the device (or this one) is not in the state the request needs
	PairCode         Code = "pair_code"         // a pairing code that is mistyped
	InvalidSettings  Code = "invalid_settings"  // a settings change that does not validate
	PeerRefused      Code = "peer_refused"      // the other device refused, or is not the one expected
	PeerFailed       Code = "peer_failed"       // the other device or the network failed
	BadConversation  Code = "conversation"      // a conversation ID that names no file, or a damaged file
	NoConversation   Code = "no_conversation"   // a conversation that does not exist
	ConversationDisk Code = "conversation_disk" // the conversations folder cannot be read or written
	Folder           Code = "folder"            // a folder the model folder's Browse cannot open
)

// Severity says how much a problem stands in the way.
type Severity string

const (
	SevError   Severity = "error"   // something the person asked for does not work
	SevWarning Severity = "warning" // it works, less well or not for everyone
)

// Kind is what sort of failure a problem is, for those that end a request:
// the HTTP layer maps it to a status.
type Kind string

const (
	KindRequest     Kind = "request"     // the request itself is wrong
	KindUnavailable Kind = "unavailable" // the agent cannot serve it now (no model, no engine)
	KindUnusable    Kind = "unusable"    // what the request names cannot be used (the model)
	KindFailed      Kind = "failed"      // the agent failed while serving it
	KindState       Kind = "state"       // a standing condition, shown in Status; ends no request
	KindNotFound    Kind = "not_found"   // what the request names does not exist
	KindConflict    Kind = "conflict"    // the request does not fit the present state
	KindDenied      Kind = "denied"      // another device refused it
	KindPeer        Kind = "peer"        // another device or the network failed while serving it
)

// Spec is one registered kind of problem: the words every occurrence shares.
type Spec struct {
	Code     Code
	Title    string // one short sentence: what is wrong
	Fix      string // what to do
	Severity Severity
	Kind     Kind
}

var registry = []Spec{
	{NoModel, "No model chosen.", "Pick a model in Models (or start the agent with --model FILE.gguf).", SevError, KindUnavailable},
	{ModelUnreadable, "The selected model cannot be read.", "Choose another model in Models.", SevError, KindUnusable},
	{NoPlan, "No plan for this model on these devices.", "Pick a smaller model, pair and turn on more devices, or raise the memory budget.", SevError, KindUnusable},
	{EngineDied, "The engine stopped unexpectedly.", "Your next message restarts it. If this keeps happening, the model file may be damaged or too big for this machine: choose another in Settings.", SevError, KindFailed},
	{ModelLoad, "The selected model cannot be loaded.", "Choose another model in the chat's model menu or under Models.", SevError, KindUnusable},
	{ModelChanged, "The model file changed while it was in use.", "Send the message again once the file is complete (a copy or download may still be running), or choose another model.", SevError, KindFailed},
	{BadRequest, "The engine refused the request.", "Change the request as the message says and send it again.", SevError, KindRequest},
	{EmptyConversation, "The conversation is empty.", "Send at least one message.", SevError, KindRequest},
	{ContextFull, "The message does not fit in the context.", "Shorten it, or raise the context length.", SevError, KindRequest},
	{NoChat, "Chat is not available in this agent.", "Start it with `homering headless --model FILE.gguf` or the app.", SevError, KindUnavailable},
	{Settings, "The settings cannot be read.", "Check settings.json in the config folder, or save the settings again from the Settings page.", SevError, KindFailed},
	{DamagedFile, "A configuration file was damaged and set aside.", "Homering runs on the defaults: set them again (pair devices again for paired.json), or stop Homering, fix the kept file and give it its name back.", SevWarning, KindState},
	{SettingsWrite, "The settings cannot be saved.", "Check that the config folder can be written and its disk has room, then save again.", SevError, KindFailed},
	{ChatFailed, "The reply failed.", "Send the message again; if it keeps failing, restart Homering (its log says more).", SevError, KindFailed},
	{Interface, "The chosen network interface cannot be used.", "Clear or fix interface in config.json.", SevWarning, KindState},
	{LinkPort, "Cannot accept connections.", "Close the program using the port, or change link_port in config.json.", SevError, KindState},
	{Advertise, "Other devices cannot find this one by themselves.", "Check the network connection (homering doctor), or add this device by address on the others.", SevWarning, KindState},
	{SelfCopy, "Another device uses this device's identity.", "On the copy, stop Homering, delete key.pem and cert.pem from its config directory and start it again; then pair it anew.", SevError, KindState},
	{ChatAPIPort, "The OpenAI, Anthropic and Ollama compatible APIs are not on their port.", "Close the program using the port, or choose another API port in Settings (homering settings api_port=N) or with --api-port N, and restart Homering.", SevWarning, KindState},
	{UnknownPeer, "That device is not known here.", "Check its name or ID in Devices, or add it by address.", SevError, KindNotFound},
	{PeerState, "That cannot be done now.", "Do what the message says first, then try again.", SevError, KindConflict},
	{PairCode, "The pairing code is mistyped.", "Type the code again from the other device's screen.", SevError, KindRequest},
	{InvalidSettings, "The settings are not valid.", "Change what the message names and save again.", SevError, KindRequest},
	{PeerRefused, "The other device refused.", "Pair the two devices again (show a new code on the other one), then try again.", SevError, KindDenied},
	{PeerFailed, "The other device could not be reached.", "Check that it is on and on the network (homering doctor), then try again.", SevError, KindPeer},
	{BadConversation, "That conversation cannot be read.", "Pick another conversation, or start a new one.", SevError, KindRequest},
	{NoConversation, "That conversation does not exist.", "Pick another conversation, or start a new one.", SevError, KindNotFound},
	{ConversationDisk, "The conversations cannot be read or saved.", "Check that the conversations folder in the config folder can be read and written and its disk has room.", SevError, KindFailed},
	{Folder, "That folder cannot be opened.", "Pick another folder.", SevError, KindRequest},
	{PeerCopy, "Two devices share one identity.", "On one of them, stop Homering, delete key.pem and cert.pem from its config directory and start it again.", SevWarning, KindState},
}

// Lookup returns code's registered words.
func Lookup(code Code) (Spec, bool) {
	i := slices.IndexFunc(registry, func(s Spec) bool { return s.Code == code })
	if i < 0 {
		return Spec{}, false
	}
	return registry[i], true
}

// All returns every registered problem, in registry order.
func All() []Spec { return slices.Clone(registry) }

// Make is the problem of code with text, one sentence of this occurrence's
// specifics; instance (optional) tells apart problems of one code about
// different things (a device ID): the Status shows one per instance.
func Make(code Code, text string, instance ...string) apitype.Problem {
	s, ok := Lookup(code)
	if !ok {
		// A programming error: still say something a person can use.
		s = Spec{Code: code, Title: "Something went wrong.", Fix: "Try again; if it keeps happening, restart Homering.", Severity: SevError, Kind: KindFailed}
	}
	c := string(code)
	if len(instance) > 0 && instance[0] != "" {
		c += ":" + instance[0]
	}
	return apitype.Problem{Code: c, Title: s.Title, Text: text, Fix: s.Fix, Severity: string(s.Severity)}
}

// Error is a problem that ends a request: its Code and this occurrence's
// sentence. Services return it; the HTTP layer picks the status from the
// code's Kind.
type Error struct {
	Code Code
	Text string // one sentence saying what is wrong and, where it helps, what to do
	Err  error  // the service's error behind it, for errors.Is; may be nil
}

func (e *Error) Error() string { return e.Text }

func (e *Error) Unwrap() error { return e.Err }

// New returns the problem error of code with text.
func New(code Code, text string) *Error { return &Error{Code: code, Text: text} }

// Wrap returns the problem error of code with text, the sentence a person
// reads, over err, the service's own error.
func Wrap(code Code, text string, err error) *Error { return &Error{Code: code, Text: text, Err: err} }

// KindOf is the Kind of err's problem, KindFailed for an error that is no
// problem Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		if s, ok := Lookup(e.Code); ok {
			return s.Kind
		}
	}
	return KindFailed
}

// Sentence makes s one sentence: trimmed, capitalised, ending with a full
// stop.
func Sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "?") && !strings.HasSuffix(s, "!") {
		s += "."
	}
	return s
}
