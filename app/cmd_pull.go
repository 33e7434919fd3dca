package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"homering/app/api/apitype"
	"homering/app/api/client"
	"homering/app/config"
	"homering/app/problem"
	"homering/app/pull"
)

const pullUsage = `Usage: homering pull [--dir FOLDER] URL|REF

Downloads a GGUF model into the model folder: the URL of a .gguf file, or a
Hugging Face reference, hf.co/OWNER/REPO/FILE.gguf or OWNER/REPO:FILE.gguf
(HF_ENDPOINT, when set, is the Hub to ask). Bytes go to FILE.gguf.partial,
which a later pull resumes (HTTP Range); the file is checked against the
SHA-256 the server publishes (Hugging Face's LFS oid, or an ETag that is
one) and must be a whole GGUF before it is named FILE.gguf and listed.

With a running agent the download runs there, so the app shows its progress
bar too; Ctrl-C cancels it. Without one, or with --dir, it runs here.

Flags:
`

// cmdPull is `homering pull`.
func cmdPull(ctx context.Context, e env) int {
	fs := newFlags(e, "pull", pullUsage)
	dirFlag := fs.String("dir", "", "download into this `folder` instead of the model folder setting (in this process)")
	args, exit, ok := parseInterspersed(fs, e.args)
	if !ok {
		return exit
	}
	if len(args) != 1 {
		fs.Usage()
		fmt.Fprintln(e.stderr, "homering pull: give one URL or Hugging Face reference.")
		return 2
	}
	ref := args[0]
	if _, err := pull.Resolve(ref, os.Getenv("HF_ENDPOINT")); err != nil {
		return pullFail(e.stderr, err)
	}
	c, dir, err := agentClient()
	if err == nil && *dirFlag == "" {
		var p apitype.Pull
		if p, err = c.Pull(ctx, ref); err == nil {
			return followPull(ctx, e, c, p)
		}
	}
	if err != nil && !errors.Is(err, client.ErrNoAgent) {
		return pullFail(e.stderr, err)
	}
	folder := *dirFlag
	if folder == "" {
		set, err := config.LoadSettings(dir)
		if err != nil {
			return pullFail(e.stderr, err)
		}
		if folder = set.ModelDir; folder == "" {
			return pullFail(e.stderr, errors.New("no model folder is set; set one with homering settings model_dir=PATH (or give --dir FOLDER) and pull again"))
		}
	}
	return pullHere(ctx, e, ref, folder)
}

// pullFail prints err as one sentence and returns exit status 1.
func pullFail(w io.Writer, err error) int {
	fmt.Fprintf(w, "homering pull: %s\n", problem.Sentence(err.Error()))
	return 1
}

// pullHere downloads in this process with a progress line on stderr.
func pullHere(ctx context.Context, e env, ref, folder string) int {
	src, err := pull.Resolve(ref, os.Getenv("HF_ENDPOINT"))
	if err != nil {
		return pullFail(e.stderr, err)
	}
	line := progressLine(e.stderr, src.Name)
	res, err := pull.Get(ctx, src, folder, pull.Options{Retries: 3, Progress: line})
	fmt.Fprintln(e.stderr)
	if err != nil {
		return pullFail(e.stderr, err)
	}
	st := apitype.Pull{Name: src.Name, Path: res.Path, Verified: res.Verified}
	switch {
	case res.Existing:
		st.Message = src.Name + " is already in the model folder."
	case res.Verified:
		st.Message = src.Name + " is downloaded and matches the SHA-256 the server publishes."
	default:
		st.Message = src.Name + " is downloaded and is a whole GGUF, but the server publishes no SHA-256 to verify it against."
	}
	fmt.Fprintf(e.stdout, "%s\n%s\n", st.Message, st.Path)
	return 0
}

// followPull prints the agent's download p until it ends; Ctrl-C cancels it.
func followPull(ctx context.Context, e env, c *client.Client, p apitype.Pull) int {
	line := progressLine(e.stderr, p.Name)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(e.stderr)
			// The signal context is done; cancel with a fresh one.
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := c.CancelPull(cctx, p.ID); err != nil {
				return pullFail(e.stderr, err)
			}
			fmt.Fprintf(e.stderr, "homering pull: cancelled; pull %s again to resume.\n", p.Ref)
			return 1
		case <-tick.C:
		}
		list, err := c.Pulls(ctx)
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			fmt.Fprintln(e.stderr)
			return pullFail(e.stderr, err)
		}
		for _, q := range list {
			if q.ID != p.ID {
				continue
			}
			if q.State == apitype.PullRunning {
				if q.Done > 0 {
					line(q.Done, q.Total)
				}
				break
			}
			fmt.Fprintln(e.stderr)
			if q.State != apitype.PullDone {
				fmt.Fprintf(e.stderr, "homering pull: %s\n", q.Message)
				return 1
			}
			fmt.Fprintf(e.stdout, "%s\n%s\n", q.Message, q.Path)
			return 0
		}
	}
}

// progressLine returns a Progress func that rewrites one terminal line.
func progressLine(w io.Writer, name string) func(done, total int64) {
	return func(done, total int64) {
		if total > 0 {
			fmt.Fprintf(w, "\rDownloading %s: %s of %s (%d%%)  ", name, pull.SizeText(done), pull.SizeText(total), done*100/total)
		} else {
			fmt.Fprintf(w, "\rDownloading %s: %s  ", name, pull.SizeText(done))
		}
	}
}
