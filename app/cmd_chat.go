package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"homering/app/api/apitype"
	"homering/app/api/openai"
	"homering/discovery/identity"
)

const chatUsage = `Usage: homering chat [flags] PROMPT

Sends PROMPT to the running agent on this machine and streams the reply to
stdout. The agent runs it across every paired, contributing device Halda
gives layers to (or on this device alone), exactly as the app's chat does.
At the end the stats go to stderr: time to first token, time per output
token, and per device of the ring its windows, measured ms per token and
memory pressure (--json: the stats as JSON).

Flags:
`

// cmdChat is `homering chat`.
func cmdChat(ctx context.Context, e env) int {
	fs := newFlags(e, "chat", chatUsage)
	model := fs.String("m", "", "the model: a GGUF `file` on this machine (default: the one chosen in Settings)")
	rounds := fs.Int("rounds", 0, "rounds per token k (default: Halda's choice)")
	devices := fs.String("devices", "", `"all": every reachable paired device takes layers (default: Halda chooses)`)
	noPrefetch := fs.Bool("no-prefetch", false, "workers do not prefetch their next window")
	temp := fs.Float64("temp", -1, "temperature; 0 is greedy (default: the engine's)")
	maxTokens := fs.Int("n", 0, "at most this many tokens (default: until the model stops)")
	seed := fs.Int64("seed", -1, "sampling seed (default: random)")
	raw := fs.Bool("raw", false, "send PROMPT as raw text, without the model's chat template")
	asJSON := fs.Bool("json", false, "print the stats to stderr as JSON")
	if exit, ok := parseFlags(fs, e.args); !ok {
		return exit
	}
	prompt := strings.Join(fs.Args(), " ")
	if strings.TrimSpace(prompt) == "" {
		fmt.Fprintln(e.stderr, "homering chat: give a prompt.")
		fs.Usage()
		return 2
	}
	if *devices != "" && *devices != "all" {
		fmt.Fprintf(e.stderr, "homering chat: --devices takes only \"all\", not %q.\n", *devices)
		return 2
	}
	if *rounds < 0 {
		fmt.Fprintln(e.stderr, "homering chat: --rounds must be 1 or more.")
		return 2
	}
	req := apitype.ChatRequest{MaxTokens: *maxTokens, Devices: *devices, Rounds: *rounds, NoPrefetch: *noPrefetch}
	if *model != "" {
		abs, err := filepath.Abs(*model)
		if err != nil {
			return fail(e.stderr, err)
		}
		req.ModelPath = abs
	}
	if *temp != -1 { // -1: the engine's default
		if err := openai.CheckTemperature(*temp); err != nil { // the APIs' rule, word for word
			fmt.Fprintf(e.stderr, "homering chat: %s.\n", openai.RefusedBecause(err))
			return 2
		}
		req.Temperature = temp
	}
	if *seed >= 0 {
		req.Seed = seed
	}
	if *raw {
		req.Prompt = prompt
	} else {
		req.Messages = []apitype.ChatMessage{{Role: "user", Content: prompt}}
	}
	c, _, err := agentClient()
	if err != nil {
		return fail(e.stderr, err)
	}
	st, err := c.Chat(ctx, req, func(text string) { fmt.Fprint(e.stdout, text) })
	fmt.Fprintln(e.stdout)
	if err != nil {
		return fail(e.stderr, err)
	}
	if *asJSON {
		b, _ := json.Marshal(st)
		fmt.Fprintf(e.stderr, "%s\n", b)
		return 0
	}
	printChatStats(e.stderr, st)
	return 0
}

// printChatStats writes a finished chat's stats for people.
func printChatStats(w io.Writer, st apitype.ChatStats) {
	fmt.Fprintf(w, "%d prompt + %d output tokens, TTFT %s ms (first pass after %s ms, %s ms of it planning), TPOT %s ms/token (%.1f tokens/s), stop: %s\n",
		st.PromptTokens, st.CompletionTokens, ms(st.TTFTMS), ms(st.StartMS), ms(st.PlanMS), ms(st.TPOTMS), st.TokensPerSecond, st.StopReason)
	if st.Ring == nil {
		if st.Alone != "" {
			fmt.Fprintf(w, "ran on this device alone: %s\n", st.Alone)
		} else {
			fmt.Fprintln(w, "ran on this device alone")
		}
		return
	}
	printRing(w, st.Ring)
}

// printRing writes a ring run as a table (homering chat, homering status).
func printRing(w io.Writer, r *apitype.RingRun) {
	fmt.Fprintf(w, "ring: %d devices, k=%d, %d layers, predicted %s ms/token, measured %s ms/token",
		len(r.Devices), r.K, r.Layers, ms(r.PredictedMs), ms(r.MeasuredMs))
	if r.Replans > 0 {
		fmt.Fprintf(w, "; %d re-plan(s) after losing %s, loss to next token %s ms", r.Replans, strings.Join(shortIDs(r.Lost), ", "), ms(r.LossToTokenMs))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DEVICE\tNAME\tCASE\tWINDOWS\tCPU/GPU\tVRAM\tPREDICTED ms\tMEASURED ms\tPRESSURE\tRTT ms\tPROFILE")
	for i, d := range r.Devices {
		dev := d.Short
		if i == 0 {
			dev += " (head)"
		}
		rtt := "-"
		if d.RTTMs != nil {
			rtt = ms(*d.RTTMs)
		}
		var ws []string
		for _, x := range d.Windows {
			if x.End-x.Start == 1 {
				ws = append(ws, fmt.Sprint(x.Start))
			} else {
				ws = append(ws, fmt.Sprintf("%d-%d", x.Start, x.End-1))
			}
		}
		cpu, gpu := layerSplit(d.Windows)
		vram := "-" // no GPU
		switch {
		case d.VRAMUsedBytes > 0: // measured, beside the plan's estimate
			vram = fmt.Sprintf("%s used (%s planned) of %s free", bytesStr(d.VRAMUsedBytes), bytesStr(d.VRAMBytes), bytesStr(d.VRAMFreeBytes))
		case d.GPU != "":
			vram = fmt.Sprintf("%s planned of %s free", bytesStr(d.VRAMBytes), bytesStr(d.VRAMFreeBytes))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%.1f%%\t%s\t%s\n", dev, d.Name, d.Case, strings.Join(ws, " "), cpu, gpu, vram,
			ms(d.PredictedMs), ms(d.MeasuredMs), 100*d.MemPressure, rtt, d.Profile)
	}
	tw.Flush()
}

// shortIDs are device IDs in their short form (identity.DeviceID.Short).
func shortIDs(ids []identity.DeviceID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.Short()
	}
	return out
}
