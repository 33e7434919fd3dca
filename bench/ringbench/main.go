//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"homering/engine/head"
	"homering/engine/llama"
	"homering/engine/sample"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: ringbench llama|engine|measure|na|evict|table ... (see bench/ringbench/doc.go)")
		os.Exit(2)
	}
	var err error
	args := os.Args[2:]
	switch os.Args[1] {
	case "llama", "engine":
		err = generate(os.Args[1], args, os.Stdout)
	case "measure":
		err = measure(args)
	case "na":
		err = notAvailable(args)
	case "evict":
		err = evict(args)
	case "table":
		err = table(args, os.Stdout)
	case "wait-peers":
		err = waitPeers(args)
	case "snapshot":
		err = snapshot(args)
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ringbench %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// Timing is what one generation measured.
type Timing struct {
	TTFTMs float64 `json:"ttft_ms"`
	TPOTMs float64 `json:"tpot_ms"`
	Tokens int     `json:"tokens"`
	LoadMs float64 `json:"load_ms,omitempty"`
}

const (
	warmPrompt = "Warm up: the engine pages weights in and builds its graphs."
	prompt     = "Once upon a time, in a small village by the sea, there lived an old fisherman who counted the waves every morning and told the children what the sea had said."
)

func generate(which string, args []string, out io.Writer) error {
	fs := flag.NewFlagSet(which, flag.ContinueOnError)
	model := fs.String("m", "", "GGUF file")
	n := fs.Int("n", 16, "tokens to generate")
	threads := fs.Int("threads", 1, "CPU threads")
	nCtx := fs.Int("ctx", 512, "context size")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *model == "" || *n < 2 {
		return errors.New("need -m FILE and -n ≥ 2")
	}
	var gen func(text string, n int) ([]time.Time, error)
	t0 := time.Now()
	switch which {
	case "llama":
		r, err := llama.NewReference(*model, llama.ReferenceParams{NCtx: *nCtx, Threads: *threads})
		if err != nil {
			return err
		}
		defer r.Close()
		gen = func(text string, n int) ([]time.Time, error) { return llamaGreedy(r, text, n) }
	case "engine":
		h, err := head.Open(head.Config{ModelPath: *model, NCtx: *nCtx, Threads: *threads})
		if err != nil {
			return err
		}
		defer h.Close()
		gen = func(text string, n int) ([]time.Time, error) {
			var at []time.Time
			req := head.Request{Prompt: text, MaxTokens: n, Sampling: sample.Params{Temperature: 0, TopK: 0, TopP: 1, RepeatPenalty: 1}}
			err := h.Generate(context.Background(), req, func(head.Token) error {
				at = append(at, time.Now())
				return nil
			})
			return at, err
		}
	}
	load := time.Since(t0)
	if _, err := gen(warmPrompt, 2); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	start := time.Now()
	at, err := gen(prompt, *n)
	if err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(timing(start, at, load))
}

// timing turns the times tokens were sampled at into TTFT and median TPOT.
func timing(start time.Time, at []time.Time, load time.Duration) Timing {
	t := Timing{Tokens: len(at), LoadMs: ms(load)}
	if len(at) == 0 {
		return t
	}
	t.TTFTMs = ms(at[0].Sub(start))
	var gaps []float64
	for i := 1; i < len(at); i++ {
		gaps = append(gaps, ms(at[i].Sub(at[i-1])))
	}
	t.TPOTMs = median(gaps)
	return t
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// llamaGreedy generates n tokens greedily (end-of-generation tokens
// included, so every run has n) and returns when each was sampled.
func llamaGreedy(r *llama.Reference, text string, n int) ([]time.Time, error) {
	toks, err := r.Vocab().Tokenize(text, true, true)
	if err != nil {
		return nil, err
	}
	r.KVClear()
	logits, err := r.LastLogits(toks, 0)
	if err != nil {
		return nil, err
	}
	var at []time.Time
	pos := len(toks)
	for len(at) < n {
		best := 0
		for i, v := range logits {
			if v > logits[best] {
				best = i
			}
		}
		at = append(at, time.Now())
		if len(at) == n {
			break
		}
		if logits, err = r.LastLogits([]int32{int32(best)}, pos); err != nil {
			return nil, err
		}
		pos++
	}
	return at, nil
}

// evict drops the files' clean pages from the page cache, so a case starts
// cold and no page stays charged to the cgroup that read it last.
func evict(files []string) error {
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		err = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		_ = f.Close() // opened read-only
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// Row is one case of the table (one JSON line of the results file).
type Row struct {
	Case    string   `json:"case"`
	NA      string   `json:"not_available,omitempty"` // why it was not measured
	Timing  Timing   `json:"timing"`
	Devices []DevMem `json:"devices"`
	Note    string   `json:"note,omitempty"`
}

// DevMem is one device's memory during a case.
type DevMem struct {
	Name               string  `json:"name"`
	Pressure           float64 `json:"pressure"` // peak Δ non-reclaimable / cap
	Usage              float64 `json:"usage"`    // peak usage / cap
	OOMKills           int64   `json:"oom_kills"`
	CapBytes           int64   `json:"cap_bytes"`
	PeakNonReclaimable int64   `json:"peak_non_reclaimable_bytes"`
	// PeakParts is what the device held at its peak, in bytes: the
	// cgroup's "anon", "shmem", "kernel" (and "sock" on v2) memory and
	// "process NAME" for each process's resident anonymous memory.
	PeakParts map[string]int64 `json:"peak_parts,omitempty"`
}

func (d DevMem) hasProcesses() bool {
	for k := range d.PeakParts {
		if strings.HasPrefix(k, "process ") {
			return true
		}
	}
	return false
}

// partsString prints PeakParts in MB, the cgroup's parts first.
func (d DevMem) partsString() string {
	var cg, procs []string
	for _, k := range slices.Sorted(maps.Keys(d.PeakParts)) {
		s := fmt.Sprintf("%s %.1f MB", k, float64(d.PeakParts[k])/(1<<20))
		if strings.HasPrefix(k, "process ") {
			procs = append(procs, strings.TrimPrefix(s, "process "))
		} else {
			cg = append(cg, s)
		}
	}
	return strings.Join(cg, ", ") + "; anonymous per process: " + strings.Join(procs, ", ")
}

func appendRow(path string, r Row) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if err := json.NewEncoder(f).Encode(r); err != nil {
		_ = f.Close() // the write's error is the one to report
		return err
	}
	return f.Close() // a results row counts only once it is written
}

func notAvailable(args []string) error {
	fs := flag.NewFlagSet("na", flag.ContinueOnError)
	name := fs.String("case", "", "case name")
	why := fs.String("why", "", "why it was not measured")
	out := fs.String("out", "", "results file (JSON lines)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return appendRow(*out, Row{Case: *name, NA: *why})
}

func measure(args []string) error {
	fs := flag.NewFlagSet("measure", flag.ContinueOnError)
	name := fs.String("case", "", "case name")
	out := fs.String("out", "", "results file (JSON lines)")
	cgs := fs.String("cgroups", "", "NAME=DIR,... of the devices' memory cgroups")
	parse := fs.String("parse", "json", "COMMAND's output: json (ringbench llama/engine) or chat (homering chat --json)")
	note := fs.String("note", "", "a note for the row")
	baseFile := fs.String("base", "", "JSON file from ringbench snapshot: each device's non-reclaimable bytes to count pressure from (default: at the start of COMMAND)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 || *name == "" || *out == "" {
		return errors.New("need -case, -out, -cgroups and a COMMAND after --")
	}
	devs, err := openCgroups(*cgs)
	if err != nil {
		return err
	}
	var base map[string]int64
	if *baseFile != "" {
		b, err := os.ReadFile(*baseFile)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &base); err != nil {
			return fmt.Errorf("%s: %w", *baseFile, err)
		}
	}

	// stdout and stderr both go to one pipe: homering chat --json prints its
	// stats on stderr.
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	for _, d := range devs {
		if err := d.begin(); err != nil {
			return err
		}
		if b, ok := base[d.name]; ok {
			d.base = b
		}
	}
	err = cmd.Start()
	_ = pw.Close() // the child holds its own copy; ours must go for EOF to come
	if err != nil {
		_ = pr.Close()
		return err
	}
	done := make(chan struct{})
	stop := make(chan struct{})
	go func() { // samples until the command has ended
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, d := range devs {
				d.sample()
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	var lines []timedLine
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		lines = append(lines, timedLine{at: time.Now(), text: sc.Text()})
		fmt.Fprintln(os.Stderr, "  |", sc.Text())
	}
	_ = pr.Close() // read to EOF already
	runErr := cmd.Wait()
	close(stop)
	<-done
	for _, d := range devs {
		d.sample()
	}
	row := Row{Case: *name, Note: *note}
	for _, d := range devs {
		row.Devices = append(row.Devices, d.result())
	}
	if runErr != nil {
		row.NA = fmt.Sprintf("%s failed: %v", fs.Arg(0), runErr)
		for _, l := range lines[max(len(lines)-2, 0):] {
			row.NA += " | " + l.text
		}
		for _, d := range row.Devices {
			if d.OOMKills > 0 {
				row.NA += fmt.Sprintf(" (%d OOM kills on %s)", d.OOMKills, d.Name)
			}
		}
		return appendRow(*out, row)
	}
	switch *parse {
	case "json":
		row.Timing, err = parseJSON(lines)
	case "chat":
		var ringNote string
		row.Timing, ringNote, err = parseChat(lines)
		row.Note = strings.TrimSpace(row.Note + " " + ringNote)
	default:
		err = fmt.Errorf("-parse %q: want json or chat", *parse)
	}
	if err != nil {
		row.NA = err.Error()
	}
	return appendRow(*out, row)
}

func openCgroups(list string) ([]*cgroup, error) {
	var devs []*cgroup
	for _, kv := range strings.Split(list, ",") {
		n, dir, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("-cgroups entry %q: want NAME=DIR", kv)
		}
		cg, err := openCgroup(n, dir)
		if err != nil {
			return nil, err
		}
		devs = append(devs, cg)
	}
	return devs, nil
}

type timedLine struct {
	at   time.Time
	text string
}

func parseJSON(lines []timedLine) (Timing, error) {
	for i := len(lines) - 1; i >= 0; i-- {
		var t Timing
		if json.Unmarshal([]byte(lines[i].text), &t) == nil && t.Tokens > 0 {
			return t, nil
		}
	}
	return Timing{}, errors.New("no timing line in the output")
}
