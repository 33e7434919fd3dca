package agent

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"homering/app/api/apitype"
	"homering/app/config"
	"homering/app/problem"
	"homering/app/pull"
)

// pulls are the downloads this agent runs or ran (app/pull does the
// downloading), one per file name at a time, each shown as a Work item
// while it runs. The last outcome per name is kept for the UI and the CLI
// to read.
type pulls struct {
	mu   sync.Mutex
	list []*pullJob // oldest first
}

type pullJob struct {
	st     apitype.Pull
	cancel context.CancelFunc
}

// Pull starts downloading ref into the model folder in the background and
// returns at once; Pulls says how it goes. A second pull of a file being
// downloaded returns the running one.
func (b *Agent) Pull(ref string) (apitype.Pull, error) {
	// HF_ENDPOINT is where Hugging Face's own tools look for the Hub (a
	// mirror, or a test's local server).
	src, err := pull.Resolve(ref, os.Getenv("HF_ENDPOINT"))
	if err != nil {
		return apitype.Pull{}, problem.New(problem.BadRequest, problem.Sentence(err.Error()))
	}
	set, err := config.LoadSettings(b.dir)
	if err != nil {
		return apitype.Pull{}, unreadableSettings(err)
	}
	if set.ModelDir == "" {
		return apitype.Pull{}, problem.New(problem.BadRequest, "No model folder is set, so there is nowhere to download to; choose one in Settings (or homering settings model_dir=PATH) and download again.")
	}
	id := "download:" + src.Name
	b.pulls.mu.Lock()
	for _, j := range b.pulls.list {
		if j.st.ID == id && j.st.State == apitype.PullRunning {
			st := j.st
			b.pulls.mu.Unlock()
			return st, nil
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	j := &pullJob{st: apitype.Pull{ID: id, Ref: ref, Name: src.Name, State: apitype.PullRunning}, cancel: cancel}
	b.pulls.list = slices.DeleteFunc(b.pulls.list, func(o *pullJob) bool { return o.st.ID == id })
	b.pulls.list = append(b.pulls.list, j)
	st := j.st
	b.pulls.mu.Unlock()

	b.work.Begin(time.Now(), id, "download", "Downloading "+src.Name, "from "+src.URL, 0)
	b.log.Info("pull: downloading", "ref", ref, "url", src.URL, "folder", set.ModelDir)
	go func() {
		defer cancel()
		res, err := pull.Get(ctx, src, set.ModelDir, pull.Options{
			Retries: 3,
			Progress: func(done, total int64) {
				b.work.Progress(time.Now(), id, done, total)
				b.pulls.mu.Lock()
				j.st.Done, j.st.Total = done, total
				b.pulls.mu.Unlock()
			},
		})
		b.work.End(id)
		b.pulls.mu.Lock()
		defer b.pulls.mu.Unlock()
		switch {
		case ctx.Err() != nil:
			j.st.State, j.st.Message = apitype.PullCancelled, fmt.Sprintf("The download of %s was cancelled; download it again to resume.", src.Name)
		case err != nil:
			j.st.State, j.st.Message = apitype.PullFailed, problem.Sentence(err.Error())
		default:
			j.st.State, j.st.Path, j.st.Verified = apitype.PullDone, res.Path, res.Verified
			j.st.Done, j.st.Total = res.Size, res.Size
			switch {
			case res.Existing:
				j.st.Message = fmt.Sprintf("%s is already in the model folder.", src.Name)
			case res.Verified:
				j.st.Message = fmt.Sprintf("%s is downloaded and matches the SHA-256 the server publishes.", src.Name)
			default:
				j.st.Message = fmt.Sprintf("%s is downloaded and is a whole GGUF, but the server publishes no SHA-256 to verify it against.", src.Name)
			}
		}
		b.log.Info("pull: ended", "ref", ref, "state", j.st.State, "message", j.st.Message)
	}()
	return st, nil
}

// Pulls lists the downloads, oldest first.
func (b *Agent) Pulls() []apitype.Pull {
	b.pulls.mu.Lock()
	defer b.pulls.mu.Unlock()
	out := make([]apitype.Pull, 0, len(b.pulls.list))
	for _, j := range b.pulls.list {
		out = append(out, j.st)
	}
	return out
}

// CancelPull stops the download id; its partial stays for a later resume.
func (b *Agent) CancelPull(id string) error {
	b.pulls.mu.Lock()
	defer b.pulls.mu.Unlock()
	for _, j := range b.pulls.list {
		if j.st.ID == id && j.st.State == apitype.PullRunning {
			j.cancel()
			return nil
		}
	}
	return problem.New(problem.BadRequest, fmt.Sprintf("No download %q is running, so there is nothing to cancel.", id))
}

// AddModel adds the GGUF read from r (size bytes, -1 unknown) to the model
// folder as name, a file dropped on the window (app/pull.Save), with a
// Work item while it arrives. It returns when the file is added or refused.
func (b *Agent) AddModel(name string, r io.Reader, size int64) (apitype.Pull, error) {
	set, err := config.LoadSettings(b.dir)
	if err != nil {
		return apitype.Pull{}, unreadableSettings(err)
	}
	if set.ModelDir == "" {
		return apitype.Pull{}, problem.New(problem.BadRequest, "No model folder is set, so there is nowhere to add the file; choose one in Settings and drop it again.")
	}
	id := "add:" + name
	b.work.Begin(time.Now(), id, "download", "Adding "+name, "to "+set.ModelDir, 0)
	defer b.work.End(id)
	res, err := pull.Save(r, set.ModelDir, name, size, func(done, total int64) { b.work.Progress(time.Now(), id, done, total) })
	if err != nil {
		return apitype.Pull{}, problem.New(problem.BadRequest, problem.Sentence(err.Error()))
	}
	b.log.Info("pull: added a model file", "path", res.Path, "bytes", res.Size)
	return apitype.Pull{ID: id, Name: name, State: apitype.PullDone, Path: res.Path, Done: res.Size, Total: res.Size,
		Message: fmt.Sprintf("%s is in the model folder.", name)}, nil
}
