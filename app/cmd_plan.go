package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"homering/halda"
	"homering/halda/lpsolve"
)

// deviceFiles is a repeatable, comma-separated --devices flag.
type deviceFiles []string

func (d *deviceFiles) String() string { return strings.Join(*d, ",") }

func (d *deviceFiles) Set(v string) error {
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			*d = append(*d, f)
		}
	}
	return nil
}

const planUsage = `Usage: homering plan --devices devices.json (--model FILE.gguf | --shape shape.json) [flags]

Prints Halda's plan: which devices take part, how many layers each runs per
round (w) and on its GPU (n), the rounds per token (k), the ring order and the
predicted time per token. A devices file holds one device profile (as
'homering profile --json' writes it), a list of them, or {"devices": [...]};
the first device is the head unless --head says otherwise. See
halda/testdata/devices.json for the prima.cpp paper's testbed D1-D4.

Flags:
`

// cmdPlan is `homering plan`.
func cmdPlan(_ context.Context, e env) int {
	fs := newFlags(e, "plan", planUsage)
	var files deviceFiles
	fs.Var(&files, "devices", "device profile JSON files (repeat the flag or separate with commas)")
	model := fs.String("model", "", "the model as a GGUF file")
	shape := fs.String("shape", "", "the model as a shape JSON file (halda.Model)")
	asJSON := fs.Bool("json", false, "print the plan as JSON")
	head := fs.String("head", "", "name of the device that runs input and output (default: the first device)")
	ctxTokens := fs.Int("context", 0, "tokens of KV cache to plan for (default: the shape's, or 4096 for a GGUF)")
	keepAll := fs.Bool("keep-all", false, "keep every device (no device selection)")
	baselines := fs.Bool("baselines", false, "also print the MemSched and PerfSched baselines' predictions")
	rounds := fs.Int("rounds", 0, "fix the rounds per token k (default: Halda chooses; 1 = one window per device, as `homering run` evaluates)")
	routing := fs.String("routing", "", "a MoE model's measured routing histogram, JSON {\"counts\": [[picks per expert] per layer]} (default: uniform top-k)")
	if exit, ok := parseFlags(fs, e.args); !ok {
		return exit
	}
	if len(files) == 0 || (*model == "") == (*shape == "") || fs.NArg() > 0 || (*routing != "" && *model == "") {
		fmt.Fprintln(e.stderr, "homering plan: give --devices and exactly one of --model or --shape (--routing goes with --model).")
		fs.Usage()
		return 2
	}
	p, err := loadPlanProblem(files, *model, *shape, *head, *ctxTokens, *routing)
	if err != nil {
		fmt.Fprintf(e.stderr, "homering plan: %v\n", err)
		return 1
	}
	p.KeepAllDevices = *keepAll
	p.Rounds = *rounds
	plan, err := halda.Solve(p, lpsolve.Solver{})
	if err != nil {
		fmt.Fprintf(e.stderr, "homering plan: %v\n", err)
		return 1
	}
	if *asJSON {
		return reportJSON(e, "plan", plan)
	}
	printPlan(e.stdout, p, plan)
	if *baselines {
		for _, b := range []struct {
			name string
			f    func(halda.Problem) (halda.Plan, error)
		}{{"MemSched", halda.MemSched}, {"PerfSched", halda.PerfSched}} {
			bp, err := b.f(p)
			switch {
			case errors.Is(err, halda.ErrOutOfMemory):
				fmt.Fprintf(e.stdout, "%s: runs out of memory on some device at every k\n", b.name)
			case err != nil:
				fmt.Fprintf(e.stdout, "%s: %v\n", b.name, err)
			default:
				fmt.Fprintf(e.stdout, "%s: k=%d, predicted %.1f ms/token (Halda %.2fx faster)\n",
					b.name, bp.K, bp.PredictedMs, bp.PredictedMs/plan.PredictedMs)
			}
		}
	}
	return 0
}

// loadPlanProblem reads the device files and the model into a Problem.
func loadPlanProblem(files []string, model, shape, head string, ctxTokens int, routing string) (halda.Problem, error) {
	var p halda.Problem
	for _, f := range files {
		ds, err := readDevices(f)
		if err != nil {
			return p, err
		}
		p.Devices = append(p.Devices, ds...)
	}
	if head != "" {
		i := -1
		for j, d := range p.Devices {
			if d.Name == head {
				i = j
			}
		}
		if i < 0 {
			return p, fmt.Errorf("--head %q names no device in the devices files", head)
		}
		p.Devices[0], p.Devices[i] = p.Devices[i], p.Devices[0]
	}
	var err error
	if shape != "" {
		p.Model, err = readShape(shape)
	} else {
		p.Model, err = modelFromGGUFRouted(model, ctxTokens, routing)
	}
	if err != nil {
		return p, err
	}
	if ctxTokens > 0 {
		p.Model.ContextTokens = ctxTokens
	}
	return p, nil
}

// decodeStrict decodes JSON, refusing unknown fields: a misspelt field in a
// hand-written profile would otherwise silently read as zero.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

func readDevices(path string) ([]halda.Device, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the devices file: %w", err)
	}
	t := bytes.TrimSpace(b)
	var ds []halda.Device
	switch {
	case bytes.HasPrefix(t, []byte("[")):
		err = decodeStrict(t, &ds)
	case bytes.Contains(t, []byte(`"devices"`)):
		var wrap struct {
			Devices []halda.Device `json:"devices"`
		}
		err = decodeStrict(t, &wrap)
		ds = wrap.Devices
	default:
		var d halda.Device
		err = decodeStrict(t, &d)
		ds = []halda.Device{d}
	}
	if err != nil {
		return nil, fmt.Errorf("%s is not a device profile (one device, a list, or {\"devices\": [...]}): %w", path, err)
	}
	return ds, nil
}

func readShape(path string) (halda.Model, error) {
	var m halda.Model
	b, err := os.ReadFile(path)
	if err != nil {
		return m, fmt.Errorf("read the shape file: %w", err)
	}
	if err := decodeStrict(bytes.TrimSpace(b), &m); err != nil {
		return m, fmt.Errorf("%s is not a model shape: %w", path, err)
	}
	return m, nil
}

// printPlan writes the plan as a table for people.
func printPlan(w io.Writer, p halda.Problem, pl halda.Plan) {
	name := p.Model.Name
	if name == "" {
		name = "the model"
	}
	fmt.Fprintf(w, "%s: %d layers, k=%d round(s) of %d layers, predicted %s ms/token (compute %s, disk %s, network %s)\n\n",
		name, p.Model.Layers, pl.K, pl.Window, ms(pl.PredictedMs), ms(pl.ComputeMs), ms(pl.DiskMs), ms(pl.NetworkMs))
	if m := p.Model; m.LayerReadBytes > 0 {
		fmt.Fprintf(w, "mixture of experts: a token reads %.1f of each layer's %.1f MB (experts %.1f MB), hot set %.1f MB, cold experts read at %.3f a token (routing %s)\n\n",
			float64(m.LayerReadBytes)/1e6, float64(sum(m.LayerBytes))/1e6, float64(m.LayerExpertBytes)/1e6, float64(m.LayerHotBytes)/1e6, m.ColdReadRate, m.Routing)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DEVICE\tOS\tCASE\tW\tN\tLAYERS PER ROUND\tPREDICTED ms\tCOMPUTE\tDISK\tNETWORK")
	for i, a := range pl.Ring {
		dev := a.Device
		if i == 0 {
			dev += " (head)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n",
			dev, a.OS, a.Case, a.W, a.N, layerRanges(a.Layers), ms(a.PredictedMs), ms(a.ComputeMs), ms(a.DiskMs), ms(a.NetworkMs))
	}
	tw.Flush()
	for _, d := range pl.Dropped {
		fmt.Fprintf(w, "\nleft out %s: %s", d.Device, d.Reason)
	}
	if len(pl.Dropped) > 0 {
		fmt.Fprintln(w)
	}
}

// ms formats milliseconds: one decimal, more below 1 ms (tiny models).
func ms(v float64) string {
	if v != 0 && v < 1 {
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// layerRanges writes [0,10) [40,50) as "0-9 40-49", or "-" for none.
func layerRanges(rs []halda.LayerRange) string {
	if len(rs) == 0 {
		return "- (input and output only)"
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%d-%d", r.Start, r.End-1)
		if r.End-r.Start == 1 {
			parts[i] = fmt.Sprint(r.Start)
		}
	}
	return strings.Join(parts, " ")
}

func sum(m map[string]int64) int64 {
	var t int64
	for _, v := range m {
		t += v
	}
	return t
}
