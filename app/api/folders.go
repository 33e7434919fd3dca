package api

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"homering/app/api/apitype"
	"homering/app/config"
)

// registerFolders adds GET /api/v1/folders, the model folder's Browse:
// the folders inside a path of this computer (hidden ones left out), with
// how many GGUFs it holds. The control API is loopback and token-only, so
// only the person at this computer sees the names.
func (s *Server) registerFolders(m *http.ServeMux) {
	m.HandleFunc("GET /api/v1/folders", func(w http.ResponseWriter, r *http.Request) {
		f, err := listFolders(r.URL.Query().Get("path"))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, apitype.Error{Error: sentence(err)})
			return
		}
		reply(w, f, nil)
	})
}

func listFolders(p string) (apitype.Folders, error) {
	p = strings.TrimSpace(p)
	if p == "" {
		p = "~"
	}
	abs, err := filepath.Abs(config.ExpandHome(p))
	if err != nil {
		return apitype.Folders{}, fmt.Errorf("%q is not a folder path; type a folder such as ~/models", p)
	}
	es, err := os.ReadDir(abs)
	if err != nil {
		return apitype.Folders{}, fmt.Errorf("cannot open the folder %s (%v); pick another folder", abs, unwrapPath(err))
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
