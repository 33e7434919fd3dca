package apitype

// Folders is GET /api/v1/folders?path=P: the folders inside P, for the
// model folder setting's Browse (the agent runs on this computer, so the
// page can pick a folder the agent can read, in a browser as in the
// window).
type Folders struct {
	Path    string   `json:"path"`   // P made absolute (~ and "" are the home folder)
	Parent  string   `json:"parent"` // "" at the root
	Folders []string `json:"folders"`
	// GGUFs counts the .gguf files right in Path, so the person sees
	// which folder holds models.
	GGUFs int `json:"ggufs"`
}
