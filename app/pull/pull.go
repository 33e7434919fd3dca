package pull

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"homering/engine/gguf"
	"homering/internal/bytesize"
)

// HuggingFace is where Hugging Face references resolve.
const HuggingFace = "https://huggingface.co"

// Source is what a reference names: the URL fetched and the file name the
// model gets in the model folder.
type Source struct {
	URL  string
	Name string // NAME.gguf, no folder
}

// Resolve reads a reference: an http(s) URL of a .gguf file, or a Hugging
// Face reference, hf.co/OWNER/REPO/FILE.gguf (also huggingface.co/...,
// with or without https://, and .../blob/REV/FILE or .../resolve/REV/FILE)
// or OWNER/REPO:FILE.gguf. Hugging Face files resolve to
// hfBase/OWNER/REPO/resolve/main/FILE ("" hfBase: HuggingFace).
func Resolve(ref, hfBase string) (Source, error) {
	ref = strings.TrimSpace(ref)
	if hfBase == "" {
		hfBase = HuggingFace
	}
	hfBase = strings.TrimSuffix(hfBase, "/")
	bad := func(why string) (Source, error) {
		return Source{}, fmt.Errorf("%q is not a model to download: %s; give the URL of a .gguf file or a Hugging Face reference such as hf.co/OWNER/REPO/FILE.gguf", ref, why)
	}
	if ref == "" {
		return bad("it is empty")
	}
	rest := ref
	for _, p := range []string{"https://", "http://"} {
		if r, ok := strings.CutPrefix(rest, p); ok {
			rest = r
		}
	}
	for _, host := range []string{"hf.co/", "huggingface.co/", "www.huggingface.co/"} {
		if r, ok := strings.CutPrefix(rest, host); ok {
			return hfFile(ref, hfBase, r, bad)
		}
	}
	if strings.HasPrefix(ref, "http://") || strings.HasPrefix(ref, "https://") {
		u, err := url.Parse(ref)
		if err != nil || u.Host == "" {
			return bad("it is not a valid URL")
		}
		name := path.Base(u.Path)
		if !isGGUF(name) {
			return bad("the URL's path does not end in a .gguf file name")
		}
		return Source{URL: u.String(), Name: name}, nil
	}
	// OWNER/REPO:FILE
	repo, file, ok := strings.Cut(ref, ":")
	if ok && strings.Count(repo, "/") == 1 {
		if !isGGUF(file) {
			return bad("after the colon give the file's name ending in .gguf (a quantization tag alone names no file)")
		}
		return hfFile(ref, hfBase, repo+"/"+file, bad)
	}
	return bad("it is neither a URL nor a Hugging Face reference")
}

// hfFile resolves OWNER/REPO/[blob|resolve/REV/]FILE.
func hfFile(ref, base, p string, bad func(string) (Source, error)) (Source, error) {
	p = strings.Split(p, "?")[0]
	parts := strings.Split(strings.Trim(p, "/"), "/")
	if len(parts) < 3 {
		return bad("a Hugging Face reference names the owner, the repository and the file")
	}
	owner, repo, file, rev := parts[0], parts[1], parts[2:], "main"
	if len(file) >= 3 && (file[0] == "blob" || file[0] == "resolve") {
		rev, file = file[1], file[2:]
	}
	name := file[len(file)-1]
	if !isGGUF(name) {
		return bad("the file's name does not end in .gguf")
	}
	for _, s := range append([]string{owner, repo, rev}, file...) {
		if s == "" || s == "." || s == ".." {
			return bad("a part of the path is empty")
		}
	}
	return Source{URL: base + "/" + owner + "/" + repo + "/resolve/" + rev + "/" + strings.Join(file, "/"), Name: name}, nil
}

func isGGUF(name string) bool {
	return len(name) > len(".gguf") && strings.EqualFold(filepath.Ext(name), ".gguf") && !strings.ContainsAny(name, `/\`)
}

// Options are how Get fetches.
type Options struct {
	// Client fetches; nil: http.DefaultClient's transport.
	Client *http.Client
	// Progress, when set, is called as bytes arrive: done of total (0:
	// unknown), at most about 200 times per download.
	Progress func(done, total int64)
	// Retries is how many times a connection lost mid-file is resumed
	// before Get gives up (keeping the partial for the next try).
	Retries int
}

// Result is a finished download.
type Result struct {
	Path   string // the model's file in the folder
	Size   int64
	SHA256 string // hex, of the whole file
	// Verified is whether the server published a SHA-256 and the file
	// matched it; false: nothing to check against (the file was still
	// checked to be a whole GGUF).
	Verified bool
	// Existing: the folder already had the file; nothing was fetched.
	Existing bool
}

// PartialSuffix ends the name of a download in progress.
const PartialSuffix = ".partial"

// etagSuffix ends the name of the file that keeps the partial's validator,
// so that a resume in a later process can send If-Range.
const etagSuffix = ".partial.etag"

// Get downloads src into dir and returns the model's path. It resumes a
// NAME.gguf.partial left by an earlier try. Errors are sentences for a
// person.
func Get(ctx context.Context, src Source, dir string, opt Options) (Result, error) {
	if !isGGUF(src.Name) {
		return Result{}, fmt.Errorf("%q is not a .gguf file name; give the URL of a .gguf file", src.Name)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return Result{}, fmt.Errorf("the model folder %q does not exist; pick an existing folder in Settings (or homering settings model_dir=PATH)", dir)
	}
	final := filepath.Join(dir, src.Name)
	if st, err := os.Stat(final); err == nil {
		return Result{Path: final, Size: st.Size(), Existing: true}, nil
	}
	client := opt.Client
	if client == nil {
		client = &http.Client{}
	}
	d := &download{src: src, client: client, opt: opt, partial: final + PartialSuffix}
	var err error
	for try := 0; ; try++ {
		err = d.fetch(ctx)
		var cut *cutError
		if err == nil || ctx.Err() != nil || !errors.As(err, &cut) || try >= opt.Retries {
			break
		}
	}
	if ctx.Err() != nil {
		return Result{}, fmt.Errorf("the download of %s was cancelled; pull it again to resume", src.Name)
	}
	if err != nil {
		return Result{}, err
	}
	return d.finish(final)
}

// cutError is a connection lost or refused: worth resuming.
type cutError struct{ msg string }

func (e *cutError) Error() string { return e.msg }

func cut(format string, a ...any) error { return &cutError{fmt.Sprintf(format, a...)} }

type download struct {
	src     Source
	client  *http.Client
	opt     Options
	partial string
	total   int64  // whole file's size; 0 unknown
	sha     string // published SHA-256, lower-case hex; "" none
	reports int64  // the done count at the last Progress call
}

// fetch makes one request and appends what arrives to the partial.
func (d *download) fetch(ctx context.Context) error {
	off := int64(0)
	if st, err := os.Stat(d.partial); err == nil {
		off = st.Size()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.src.URL, nil)
	if err != nil {
		return fmt.Errorf("cannot fetch %s: %v; check the URL", d.src.URL, err)
	}
	if off > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(off, 10)+"-")
		if b, err := os.ReadFile(d.partial[:len(d.partial)-len(PartialSuffix)] + etagSuffix); err == nil && len(b) > 0 {
			// If the file changed since the partial began, the server
			// sends all of it (200) rather than the rest of another file.
			req.Header.Set("If-Range", string(b))
		}
	}
	// Hugging Face publishes the LFS file's SHA-256 and size on its first
	// answer, the redirect to its CDN: read them before following it.
	c := *d.client
	var linked http.Header
	c.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if r.Response != nil && linked == nil && r.Response.Header.Get("X-Linked-Etag") != "" {
			linked = r.Response.Header
		}
		return nil
	}
	resp, err := c.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return cut("cannot reach %s (%v); check the network and the URL, then pull again to resume", host(d.src.URL), unwrapURL(err))
	}
	defer resp.Body.Close()
	if linked == nil && resp.Header.Get("X-Linked-Etag") != "" {
		linked = resp.Header
	}
	d.published(resp.Header, linked)

	var f *os.File
	switch {
	case resp.StatusCode == http.StatusPartialContent && off > 0:
		start, total, ok := contentRange(resp.Header.Get("Content-Range"))
		if !ok || start != off {
			return fmt.Errorf("%s answered a resume with the wrong part of the file (%q); delete %s and pull again", host(d.src.URL), resp.Header.Get("Content-Range"), filepath.Base(d.partial))
		}
		if total > 0 {
			d.total = total
		}
		f, err = os.OpenFile(d.partial, os.O_WRONLY|os.O_APPEND, 0o644)
	case resp.StatusCode == http.StatusOK:
		// A fresh start, or a server that ignores Range (or a file that
		// changed, If-Range): all of it, from the first byte.
		off = 0
		if resp.ContentLength > 0 {
			d.total = resp.ContentLength
		}
		f, err = os.OpenFile(d.partial, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && off > 0:
		// The partial is as long as the file, or longer: whole, or not
		// this file. The checksum decides.
		if _, total, ok := contentRange(resp.Header.Get("Content-Range")); ok && total == off {
			d.total = total
			return nil
		}
		d.remove()
		return fmt.Errorf("the partial download of %s is longer than the file on the server, so it was deleted; pull again to start over", d.src.Name)
	default:
		return statusError(d.src, resp.StatusCode)
	}
	if err != nil {
		return fmt.Errorf("cannot write %s: %v; check the model folder's free space and permissions", d.partial, err)
	}
	if et := resp.Header.Get("ETag"); et != "" && !strings.HasPrefix(et, "W/") {
		_ = os.WriteFile(d.partial[:len(d.partial)-len(PartialSuffix)]+etagSuffix, []byte(et), 0o644) // only a resume's If-Range is lost without it
	}
	n, err := io.Copy(fileWriter{f}, &progressReader{r: resp.Body, d: d, done: off})
	if cerr := f.Close(); err == nil && cerr != nil {
		return fmt.Errorf("cannot write %s: %v; check the model folder's free space", d.partial, cerr)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var werr *writeError
		if errors.As(err, &werr) {
			return fmt.Errorf("cannot write %s: %v; check the model folder's free space", d.partial, werr.err)
		}
		return cut("the connection to %s was lost after %s of %s; pull again to resume", host(d.src.URL), size(off+n), totalText(d.total))
	}
	if d.total > 0 && off+n < d.total {
		return cut("the connection to %s ended after %s of %s; pull again to resume", host(d.src.URL), size(off+n), totalText(d.total))
	}
	return nil
}

// published reads the size and SHA-256 the server publishes: Hugging
// Face's X-Linked-Size and X-Linked-Etag (the LFS oid), else an ETag that
// is a SHA-256.
func (d *download) published(h, linked http.Header) {
	if linked != nil {
		if n, err := strconv.ParseInt(linked.Get("X-Linked-Size"), 10, 64); err == nil && n > 0 {
			d.total = n
		}
		if s := sha256Tag(linked.Get("X-Linked-Etag")); s != "" {
			d.sha = s
			return
		}
	}
	if d.sha == "" {
		d.sha = sha256Tag(h.Get("ETag"))
	}
}

// sha256Tag returns the SHA-256 an entity tag holds ("abc…", "sha256:abc…"),
// or "" when it holds none (a weak tag, a git SHA-1, an mtime).
func sha256Tag(et string) string {
	if strings.HasPrefix(et, "W/") {
		return ""
	}
	et = strings.TrimPrefix(strings.Trim(et, `"`), "sha256:")
	if len(et) != 64 {
		return ""
	}
	if _, err := hex.DecodeString(et); err != nil {
		return ""
	}
	return strings.ToLower(et)
}

// finish checks the whole partial and gives it the model's name.
func (d *download) finish(final string) (Result, error) {
	f, err := os.Open(d.partial)
	if err != nil {
		return Result{}, fmt.Errorf("cannot read %s: %v; pull again", d.partial, err)
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	_ = f.Close() // read only: a failed read already said so
	if err != nil {
		return Result{}, fmt.Errorf("cannot read %s: %v; pull again", d.partial, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if d.total > 0 && n != d.total {
		d.remove()
		return Result{}, fmt.Errorf("%s arrived with %s of the %s expected, so it was deleted; try again", d.src.Name, size(n), size(d.total))
	}
	if d.sha != "" && sum != d.sha {
		d.remove()
		return Result{}, fmt.Errorf("the download of %s does not match the SHA-256 the server publishes (got %s, want %s), so it was deleted; pull again, and if it fails again the file on the server has changed or is damaged", d.src.Name, sum[:12], d.sha[:12])
	}
	if _, err := gguf.Open(d.partial); err != nil {
		d.remove()
		return Result{}, fmt.Errorf("the download of %s is not a usable GGUF model, so it was deleted: %v", d.src.Name, err)
	}
	if err := os.Rename(d.partial, final); err != nil {
		return Result{}, fmt.Errorf("cannot name the download %s: %v; check the model folder's permissions", final, err)
	}
	_ = os.Remove(d.partial[:len(d.partial)-len(PartialSuffix)] + etagSuffix)
	return Result{Path: final, Size: n, SHA256: sum, Verified: d.sha != ""}, nil
}

// remove deletes the partial and its validator.
func (d *download) remove() {
	_ = os.Remove(d.partial)
	_ = os.Remove(d.partial[:len(d.partial)-len(PartialSuffix)] + etagSuffix)
}

// progressReader counts bytes for Progress and tells a failed write (the
// disk) from a failed read (the network).
type progressReader struct {
	r    io.Reader
	d    *download
	done int64
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.done += int64(n)
	if fn := p.d.opt.Progress; fn != nil && n > 0 {
		step := max(p.d.total/200, 256<<10)
		if p.done-p.d.reports >= step || p.done == p.d.total {
			p.d.reports = p.done
			fn(p.done, p.d.total)
		}
	}
	return n, err
}

// writeError is a failed write to the partial, told apart from a failed
// read (the network) after io.Copy.
type writeError struct{ err error }

func (w *writeError) Error() string { return w.err.Error() }

type fileWriter struct{ f *os.File }

func (w fileWriter) Write(b []byte) (int, error) {
	n, err := w.f.Write(b)
	if err != nil {
		return n, &writeError{err}
	}
	return n, nil
}

// contentRange parses "bytes START-END/TOTAL" (or "bytes */TOTAL");
// total is 0 when "*".
func contentRange(s string) (start, total int64, ok bool) {
	s, ok = strings.CutPrefix(s, "bytes ")
	if !ok {
		return 0, 0, false
	}
	rng, tot, ok := strings.Cut(s, "/")
	if !ok {
		return 0, 0, false
	}
	if tot != "*" {
		t, err := strconv.ParseInt(tot, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total = t
	}
	if rng == "*" {
		return 0, total, true
	}
	a, _, ok := strings.Cut(rng, "-")
	if !ok {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(a, 10, 64)
	return start, total, err == nil
}

// statusError is the sentence for an answer that is not the file.
func statusError(src Source, code int) error {
	what := fmt.Sprintf("%s answered %d %s for %s", host(src.URL), code, http.StatusText(code), src.Name)
	switch code {
	case http.StatusNotFound:
		return fmt.Errorf("%s has no file at %s (404 Not Found); check the URL, or the repository and file name", host(src.URL), src.URL)
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("%s; the file needs a login or an accepted licence (a gated repository): download it in a browser and put it in the model folder", what)
	}
	if code >= 500 {
		return fmt.Errorf("%s; the server has a problem, try again later", what)
	}
	return fmt.Errorf("%s; check the URL", what)
}

func host(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return raw
}

// unwrapURL drops *url.Error's "Get URL:" prefix: the sentence names the host.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// SizeText is n bytes for a person: "7.0 MiB".
func SizeText(n int64) string { return size(n) }

func size(n int64) string {
	if n < 0 {
		return "an unknown size"
	}
	return bytesize.Text(n)
}

func totalText(n int64) string {
	if n <= 0 {
		return "an unknown size"
	}
	return size(n)
}

// Save adds a GGUF read from r (size bytes; -1 unknown) to dir as name, as
// a download is added: through NAME.gguf.partial, checked to be whole and
// to parse as GGUF, then renamed. It is how a file dropped on the window
// reaches the model folder. A name already in the folder is refused: the
// folder's file is not replaced.
func Save(r io.Reader, dir, name string, size int64, progress func(done, total int64)) (Result, error) {
	if !isGGUF(name) {
		return Result{}, fmt.Errorf("%q is not a .gguf file; add a GGUF model file", name)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return Result{}, fmt.Errorf("the model folder %q does not exist; pick an existing folder in Settings (or homering settings model_dir=PATH)", dir)
	}
	final := filepath.Join(dir, name)
	if _, err := os.Stat(final); err == nil {
		return Result{}, fmt.Errorf("the model folder already has a file named %s; rename the file to add it as another model", name)
	}
	d := &download{src: Source{Name: name}, opt: Options{Progress: progress}, partial: final + PartialSuffix, total: max(size, 0)}
	f, err := os.OpenFile(d.partial, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return Result{}, fmt.Errorf("cannot write %s: %v; check the model folder's permissions", d.partial, err)
	}
	_, err = io.Copy(fileWriter{f}, &progressReader{r: r, d: d})
	if cerr := f.Close(); err == nil && cerr != nil {
		err = &writeError{cerr}
	}
	if err != nil {
		d.remove()
		var werr *writeError
		if errors.As(err, &werr) {
			return Result{}, fmt.Errorf("cannot write %s: %v; check the model folder's free space", d.partial, werr.err)
		}
		return Result{}, fmt.Errorf("%s did not arrive whole (%v); add it again", name, err)
	}
	return d.finish(final)
}
