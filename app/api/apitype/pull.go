package apitype

// PullRequest is POST /api/v1/pull: download a GGUF into the model folder.
type PullRequest struct {
	// Ref is the URL of a .gguf file or a Hugging Face reference
	// (hf.co/OWNER/REPO/FILE.gguf, OWNER/REPO:FILE.gguf).
	Ref string `json:"ref"`
}

// PullCancelRequest is POST /api/v1/pull/cancel.
type PullCancelRequest struct {
	ID string `json:"id"`
}

// Pull is one download the agent runs or ran (GET /api/v1/pulls); while it
// runs, its progress is the Work item with the same ID (kind "download").
type Pull struct {
	ID    string `json:"id"`   // "download:NAME.gguf"
	Ref   string `json:"ref"`  // as asked
	Name  string `json:"name"` // NAME.gguf in the model folder
	State string `json:"state"`
	// Path is the model's file once done.
	Path string `json:"path,omitempty"`
	// Done and Total count bytes (Total 0: unknown).
	Done  int64 `json:"done"`
	Total int64 `json:"total"`
	// Verified: the file matched the SHA-256 the server publishes; false
	// when done means the server published none (Message says so).
	Verified bool `json:"verified"`
	// Message is a sentence for the person: the error when failed, what
	// was checked when done.
	Message string `json:"message,omitempty"`
}

// The states of a Pull.
const (
	PullRunning   = "running"
	PullDone      = "done"
	PullFailed    = "failed"
	PullCancelled = "cancelled"
)
