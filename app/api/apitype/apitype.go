package apitype

import (
	"time"

	"homering/discovery/deviceid"
)

// Device is this device as the API shows it.
type Device struct {
	ID       deviceid.ID `json:"id"`    // readable form with check characters
	Short    string      `json:"short"` // first group, for tight screens
	Name     string      `json:"name"`
	App      string      `json:"app"`
	ProtoMin uint16      `json:"proto_min"`
	ProtoMax uint16      `json:"proto_max"`
}

// Interface is a network interface and whether discovery uses it.
type Interface struct {
	Name   string   `json:"name"`
	Used   bool     `json:"used"`
	Reason string   `json:"reason"`
	Addrs  []string `json:"addrs"`
}

// Problem is something the person should know, written for them.
type Problem struct {
	Code  string `json:"code"`
	Title string `json:"title"`
	Text  string `json:"text"`
	Fix   string `json:"fix"`
	// Severity is "error" (what the person asked for does not work) or
	// "warning"; app/problem's registry sets it.
	Severity string `json:"severity,omitempty"`
}

// Status is GET /api/v1/status.
type Status struct {
	Device      Device      `json:"device"`
	Contribute  bool        `json:"contribute"`
	Listening   string      `json:"listening,omitempty"` // link listener address while contributing
	Advertising bool        `json:"advertising"`         // mDNS advertisement is up
	Interfaces  []Interface `json:"interfaces"`
	Pairing     PairStatus  `json:"pairing"`
	Problems    []Problem   `json:"problems"`
	ConfigDir   string      `json:"config_dir"`
	// ChatAPI is the base URL of the OpenAI-, Anthropic- and
	// Ollama-compatible APIs (http://127.0.0.1:47471; OpenAI clients add
	// /v1); "" when their port could not be opened (Problems says why).
	ChatAPI string `json:"chat_api,omitempty"`
	// ChatAPIShared is true while they also answer on this device's
	// network addresses (Interfaces, same port), asking other computers
	// for the API key (Settings: share the chat API).
	ChatAPIShared bool `json:"chat_api_shared,omitempty"`
	// Serving is the ring job this device runs for another device's chat
	// now (contributing); nil when it serves no one.
	Serving *ServingJob `json:"serving,omitempty"`
	// Refused counts the connections and frames other devices sent that
	// this one refused since it started, by reason ("unpaired",
	// "wrong ID", "protocol version", …); empty when none.
	Refused map[string]uint64 `json:"refused,omitempty"`
	// Goroutines is the agent process's goroutine count: the chaos run
	// (app/apptest TestChaos) checks it returns to its idle level.
	Goroutines int `json:"goroutines"`
}

// ServingJob is what this device does for another head's chat: whose
// chat, which layers, what memory.
type ServingJob struct {
	HeadID   deviceid.ID `json:"head_id"`
	HeadName string      `json:"head_name,omitempty"` // the paired name; "" when unknown
	// Layers are this device's windows in the head's plan (one per
	// round), the first GPU layers of each on its GPU; empty until the
	// plan is up.
	Layers []Window `json:"layers"`
	// MemoryBytes is the engine's anonymous memory (KV caches, compute
	// buffers: the weights are page cache the system may evict), Pressure
	// the memory taken since the job began as a fraction of the machine's.
	MemoryBytes int64     `json:"memory_bytes"`
	Pressure    float64   `json:"pressure"`
	Idle        bool      `json:"idle"` // the head holds the job between its requests
	Since       time.Time `json:"since"`
}

// Peer is one other device.
type Peer struct {
	ID         deviceid.ID `json:"id"`
	Short      string      `json:"short"`
	Name       string      `json:"name"`
	App        string      `json:"app,omitempty"`
	ProtoMin   uint16      `json:"proto_min,omitempty"`
	ProtoMax   uint16      `json:"proto_max,omitempty"`
	Contribute bool        `json:"contribute"`
	Visible    bool        `json:"visible"` // in the peer table now (mDNS or manual)
	Sources    []string    `json:"sources"` // "mdns", "manual"
	Interfaces []string    `json:"interfaces"`
	Addrs      []string    `json:"addrs"`
	FirstSeen  *time.Time  `json:"first_seen,omitempty"`
	LastSeen   *time.Time  `json:"last_seen,omitempty"`
	Expires    *time.Time  `json:"expires,omitempty"` // nil: kept until removed (manual)
	Paired     bool        `json:"paired"`
	PairedAt   *time.Time  `json:"paired_at,omitempty"`
	Conflict   bool        `json:"conflict"` // two running devices claim this ID
}

// Peers is GET /api/v1/peers.
type Peers struct {
	Peers []Peer `json:"peers"`
	// SelfCopies lists other running devices with this device's own ID.
	SelfCopies []Peer `json:"self_copies"`
}

// AddPeerRequest is POST /api/v1/peers/add.
type AddPeerRequest struct {
	Addr string `json:"addr"` // host:port or host (default link port)
}

// PeerRequest names a peer by device ID, short ID, name or host:port.
type PeerRequest struct {
	Peer string `json:"peer"`
}

// PairShow is POST /api/v1/pair/show: the code to type on the head.
type PairShow struct {
	Code    string    `json:"code"`
	Expires time.Time `json:"expires"`
}

// PairEnterRequest is POST /api/v1/pair/enter.
type PairEnterRequest struct {
	Peer string `json:"peer"`
	Code string `json:"code"`
}

// PairResult is the outcome of the last pairing attempt on this device.
type PairResult struct {
	Peer  deviceid.ID `json:"peer,omitzero"`
	Name  string      `json:"name,omitempty"`
	OK    bool        `json:"ok"`
	Error string      `json:"error,omitempty"`
	At    time.Time   `json:"at"`
}

// PairStatus is GET /api/v1/pair.
type PairStatus struct {
	Open    bool        `json:"open"` // a code is shown and unused
	Expires *time.Time  `json:"expires,omitempty"`
	Last    *PairResult `json:"last,omitempty"`
}

// ContributeRequest is POST /api/v1/contribute.
type ContributeRequest struct {
	On bool `json:"on"`
}

// Probe is POST /api/v1/peers/probe: try a link to a peer, as doctor does.
type Probe struct {
	Peer   string   `json:"peer"`
	Tried  []string `json:"tried"` // what was attempted, in order, with outcome
	OK     bool     `json:"ok"`    // a link was set up and answered a ping
	Proto  uint16   `json:"proto,omitempty"`
	App    string   `json:"app,omitempty"`
	Name   string   `json:"name,omitempty"`
	Error  string   `json:"error,omitempty"`
	Advice []string `json:"advice,omitempty"`
}

// Doctor is GET /api/v1/doctor.
type Doctor struct {
	Checks []Check `json:"checks"`
}

// Check is one diagnostic line.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Error is the body of every non-2xx answer.
type Error struct {
	Error string `json:"error"`
	// Code is the problem's code (app/problem) when the error is a
	// registered problem: the chat's error event carries it, so that the UI
	// can act on a kind of failure ("context_full") without reading words.
	Code string `json:"code,omitempty"`
}

// InfoFile is the name of the file, in the config directory, where a running
// agent writes how to reach its API (mode 0600, removed at exit).
const InfoFile = "api.json"

// Info is the content of InfoFile.
type Info struct {
	URL   string `json:"url"`   // http://127.0.0.1:PORT
	Token string `json:"token"` // per run; send as "Authorization: Bearer TOKEN"
	PID   int    `json:"pid"`
}

// Event is one line of GET /api/v1/watch (server-sent events, one JSON
// object per "data:" line). Kind is one of: peer_joined, peer_updated,
// peer_left, peer_conflict, self_copy, contribute, paired, pair_failed,
// unpaired. Peer is set for peer and pairing events.
type Event struct {
	Kind   string    `json:"kind"`
	At     time.Time `json:"at"`
	Peer   *Peer     `json:"peer,omitempty"`
	Reason string    `json:"reason,omitempty"`
	On     *bool     `json:"on,omitempty"` // contribute events
}
