package agent

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"homering/app/api/apitype"
	"homering/app/config"
	"homering/app/node"
	"homering/app/planner"
	"homering/app/problem"
	"homering/engine/chat"
	"homering/engine/runner"
)

// Served implements Chatter.
func (b *Agent) Served() []apitype.ServedModel {
	path, _ := b.model()
	if path == "" {
		return nil
	}
	m := apitype.ServedModel{Name: strings.TrimSuffix(filepath.Base(path), ".gguf"), Path: path}
	if fi, err := os.Stat(path); err == nil {
		m.Size, m.Modified = fi.Size(), fi.ModTime().Unix()
	}
	return []apitype.ServedModel{m}
}

// Running implements Chatter.
func (b *Agent) Running() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.running)
}

// StopChat implements Chatter.
func (b *Agent) StopChat(conv string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for r := range b.running {
		if conv == "" || r.conv == conv {
			r.cancel()
			n++
		}
	}
	return n
}

// Chat implements Chatter.
func (b *Agent) Chat(ctx context.Context, req apitype.ChatRequest, emit func(string) error) (apitype.ChatStats, error) {
	start := time.Now()
	set := b.settings()
	path, nCtx := set.Model, set.ContextTokens
	if req.ModelPath != "" {
		path = req.ModelPath
	}
	if path == "" {
		return apitype.ChatStats{}, problem.New(problem.NoModel, "No model is selected; choose one in the chat's model menu or under Models (or start the agent with --model FILE.gguf).")
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		// Deleted or moved since it was chosen: say so before planning
		// a ring or starting the engine on it.
		return apitype.ChatStats{}, problem.Wrap(problem.ModelUnreadable, fmt.Sprintf(
			"%s is no longer in %s (deleted or moved); choose another model in the chat's model menu or under Models.",
			filepath.Base(path), filepath.Dir(path)), err)
	}
	if req.NumCtx > 0 {
		nCtx = req.NumCtx
	}
	g := runner.DefaultGenerate()
	g.MaxTokens = req.MaxTokens
	if req.Temperature != nil {
		g.Temperature = float32(*req.Temperature)
	}
	if req.TopP != nil {
		g.TopP = float32(*req.TopP)
	}
	if req.TopK != nil {
		g.TopK = *req.TopK
	}
	if req.Seed != nil {
		g.Seed = uint64(*req.Seed)
	} else {
		var s [8]byte
		rand.Read(s[:])
		g.Seed = binary.LittleEndian.Uint64(s[:])
	}
	hasSystem := len(req.Messages) > 0 && req.Messages[0].Role == "system"
	if req.System != "" && !hasSystem {
		g.Messages = append(g.Messages, runner.Message{Role: "system", Content: req.System})
	}
	for _, m := range req.Messages {
		content := m.Content
		if m.Role == "assistant" {
			// An earlier answer sent back with its thinking inline is
			// prompted as the reasoning families' templates write it.
			content = chat.AnswerOnly(content)
		}
		g.Messages = append(g.Messages, runner.Message{Role: m.Role, Content: content})
	}
	g.Prompt = req.Prompt
	if g.Prompt == "" {
		g.Opening = replyOpening(path, req.Think)
	}
	if req.JSONSchema != "" {
		g.JSONSchema = json.RawMessage(req.JSONSchema) // the engine child builds its grammar
		if req.ForceCall {
			g.Call = &runner.CallGrammar{Before: req.SchemaBefore, After: req.SchemaAfter}
		}
	}
	if len(g.Messages) == 0 && g.Prompt == "" {
		return apitype.ChatStats{}, problem.New(problem.EmptyConversation, "The conversation is empty; send at least one message.")
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	run := &chatRun{conv: req.ConversationID, cancel: cancel}
	b.mu.Lock()
	b.running[run] = struct{}{}
	b.mu.Unlock()
	defer b.prof.Busy()() // a background measurement stops now and resumes when idle
	defer func() {
		b.mu.Lock()
		delete(b.running, run)
		b.mu.Unlock()
	}()

	lp := runner.LoadParams{Model: path, NCtx: nCtx, Threads: b.threads, Draft: b.draftFor(path, set.Draft)}
	var first time.Time
	onToken := func(t runner.Token) error {
		if first.IsZero() {
			first = time.Now()
		}
		if t.Text == "" {
			return nil
		}
		return emit(t.Text)
	}
	var st runner.Stats
	var err error
	var ringRun *apitype.RingRun
	// Every attempt, on the ring or alone, leaves out old messages when
	// the conversation outgrows the context (fit.go).
	fit := fitter{fit: req.FitContext, nCtx: nCtx, maxTokens: req.MaxTokens, perByte: b.learntPerByte(path), from: req.LeftOut}
	if fit.fit && fit.from == 0 {
		fit.from = b.rememberedStart(path, g.Messages)
	}
	leftOut := 0
	fitRun := func(run func(runner.GenerateParams) (runner.Stats, error)) (runner.Stats, error) {
		st, n, perByte, err := fit.fitRun(g, run)
		leftOut = n
		b.learnPerByte(path, perByte)
		if err == nil {
			b.rememberStart(path, g.Messages, n)
		}
		return st, err
	}
	var engineAt time.Time // the engine was given its job
	// A greedy chat's draft runs on this device beside its windows: the
	// plan leaves room for its weights (read every token; paged out under
	// a cap, they cost more than the speculation saves).
	var reserve int64
	if lp.Draft != "" && g.Temperature <= 0 {
		if st, err := os.Stat(lp.Draft); err == nil {
			reserve = st.Size()
		}
	}
	job, note := b.planRing(ctx, path, nCtx, req, reserve, false)
	for attempt := 0; job != nil; attempt++ {
		b.log.Info("chat on the ring", "devices", len(job.pl.Plan.Ring), "k", job.pl.Plan.K, "predicted_ms", job.pl.Plan.PredictedMs,
			"planned_in", time.Since(start).Round(time.Millisecond))
		rp := job.params
		// The runner holds the job idle this long (ring_keep_seconds, 0: not
		// at all), so that the conversation's next turn on the same plan
		// starts at once and skips the prefill passes of the conversation so
		// far (all but the last, beyond 512 tokens; the reply is a fresh
		// job's). Workers give an idle job up at once for another head's job
		// or when memory is short; this device ends it as soon as the next
		// chat could not use it (SettingsChanged, watchContribute, Close).
		rp.KeepMS = set.RingKeepSeconds * 1000
		var endTransfers func()
		rp.OnProgress, endTransfers = b.transferProgress(job)
		engineAt = time.Now()
		st, err = fitRun(func(g runner.GenerateParams) (runner.Stats, error) {
			return b.sup.RingGenerate(ctx, lp, rp, g, onToken)
		})
		endTransfers()
		b.replanned(job, st)
		var died *runner.DiedError
		var full *problem.Error
		if errors.As(err, &full) && full.Code == problem.ContextFull {
			// The prompt, not the ring: this device alone could not run it either.
			b.keep(nil, 0)
			break
		}
		if err != nil && first.IsZero() && ctx.Err() == nil && !errors.As(err, &died) {
			b.keep(nil, 0)
			if job.reused && attempt == 0 {
				// The kept job's workers were not asked again; one may have
				// restarted since. Ask them all and try once more.
				b.log.Info("the ring on the kept job's workers failed before its first token; asking them again", "err", err)
				job, note = b.planRing(ctx, path, nCtx, req, reserve, true)
				continue
			}
			// The ring never produced a token (every worker refused or
			// vanished while preparing): this device alone still answers,
			// more slowly, rather than losing the message.
			b.log.Warn("the ring failed before its first token; answering on this device alone", "err", err)
			job, note = nil, "the ring could not start: "+err.Error()
			break
		}
		ringRun = b.ringRun(job, st)
		b.remember(job.model, ringRun, "")
		keep := time.Duration(0)
		if err == nil {
			keep = time.Duration(rp.KeepMS) * time.Millisecond
		}
		b.keep(job, keep)
		break
	}
	if job == nil {
		if note != "" {
			b.log.Info("chat on this device alone", "why", note)
		}
		b.remember("", nil, note)
		b.keep(nil, 0)
		// A ring job kept from an earlier turn would hold the workers'
		// memory until its time is up: this chat does not use it.
		if err := b.sup.EndRingJob(ctx); err != nil {
			b.log.Info("ending the kept ring job", "err", err)
		}
		// The planner's GPU layers for this device alone: the same plan
		// the device map shows and `homering run --gpu-layers auto` runs.
		lp.GPULayers = b.aloneGPULayers(path, nCtx)
		engineAt = time.Now()
		alone := func(g runner.GenerateParams) (runner.Stats, error) { return b.sup.Generate(ctx, lp, g, onToken) }
		st, err = fitRun(alone)
		var re *runner.RequestError
		if lp.GPULayers > 0 && errors.As(err, &re) && re.Code == runner.CodeLoad {
			// The profile promised a GPU the engine cannot use (its library
			// gone, its memory taken since): the CPU still answers.
			b.log.Warn("the engine cannot put layers on the GPU; running every layer on the CPU", "gpu_layers", lp.GPULayers, "err", re.Text)
			lp.GPULayers = 0
			st, err = fitRun(alone)
		}
		if err == nil {
			b.learnAlone(path, nCtx, st) // calibration: profile_calib.go
		}
	}
	out := chatStats(st, strings.TrimSuffix(filepath.Base(path), ".gguf"))
	out.Ring = ringRun
	out.LeftOut = leftOut
	if leftOut > 0 && err == nil {
		b.log.Info("left the oldest messages out of the prompt: the conversation outgrew the context", "left_out", leftOut, "prompt_tokens", st.PromptTokens)
	}
	if ringRun == nil {
		out.Alone = note
	}
	if !first.IsZero() {
		out.TTFTMS = float64(first.Sub(start)) / float64(time.Millisecond)
	}
	out.PlanMS = float64(engineAt.Sub(start)) / float64(time.Millisecond)
	if st.StartMS > 0 {
		// Everything before the engine's first pass: all of this request's
		// time but what the engine spent from that pass on.
		out.StartMS = float64(time.Since(start))/float64(time.Millisecond) - (st.TotalMS - st.StartMS)
	}
	if st.DecodeTokens > 0 {
		out.TPOTMS = st.DecodeMS / float64(st.DecodeTokens)
	}
	if err != nil && errors.Is(err, context.Canceled) && ctx.Err() != nil {
		out.StopReason = runner.ReasonCancelled
		return out, nil // stopped on purpose: the reply so far stands
	}
	if err != nil {
		return out, b.problem(path, err)
	}
	if b.problems != nil {
		b.problems.ClearProblem(string(problem.EngineDied))
		b.problems.ClearProblem(string(problem.ModelLoad))
	}
	return out, nil
}

func (b *Agent) report(p apitype.Problem) {
	if b.problems != nil {
		b.problems.SetProblem(p)
	}
}

// problem words an engine failure for a person.
func (b *Agent) problem(path string, err error) error {
	var died *runner.DiedError
	var re *runner.RequestError
	switch {
	case errors.As(err, &died) && died.ModelChange != "":
		// A file cut short under the engine's mapping kills it with
		// SIGBUS: the change, not the crash, is what a person can act on.
		name := filepath.Base(died.Model)
		b.report(problem.Make(problem.ModelChanged, fmt.Sprintf("%s %s while the engine was using it.", name, died.ModelChange)))
		return problem.New(problem.ModelChanged, fmt.Sprintf(
			"%s %s while the engine was using it, which stopped the engine; send the message again once the file is complete, or choose another model.",
			name, died.ModelChange))
	case errors.As(err, &died) && died.OOM:
		// Killed by the kernel for memory: the fix is memory, not the file.
		b.report(problem.Make(problem.EngineDied, fmt.Sprintf("The system ran out of memory and stopped it (%s) while %s.", died.State, died.During)))
		return problem.New(problem.EngineDied, fmt.Sprintf(
			"The engine was stopped by the system because memory ran out while %s. It restarts with your next message; close other apps or choose a smaller model if this keeps happening.",
			died.During))
	case errors.As(err, &died) && died.Signal == "SIGKILL" && died.LastLine() == "":
		// Killed from outside with nothing in its log: neither the file nor
		// the machine's size is to blame.
		b.report(problem.Make(problem.EngineDied, fmt.Sprintf("It was killed from outside (%s) while %s.", died.State, died.During)))
		return problem.New(problem.EngineDied, fmt.Sprintf(
			"The engine was killed from outside (SIGKILL, not for lack of memory) while %s. It restarts with your next message.",
			died.During))
	case errors.As(err, &died):
		what := died.LastLine()
		if what == "" {
			what = died.State
		}
		b.report(problem.Make(problem.EngineDied, fmt.Sprintf("It ended (%s) while %s; its last words: %q.", died.State, died.During, what)))
		return problem.New(problem.EngineDied, fmt.Sprintf(
			"The engine stopped unexpectedly while %s (%s). It restarts with your next message; if this keeps happening, the model file may be damaged or too big for this machine.",
			died.During, what))
	case errors.As(err, &re) && re.Code == runner.CodeLoad:
		b.report(problem.Make(problem.ModelLoad, fmt.Sprintf("%s: %s", filepath.Base(path), re.Text)))
		if strings.Contains(strings.TrimSuffix(re.Text, "."), ". ") {
			// The engine's words already say what to do (engine/gguf's
			// "… is incomplete: …. Download it again."): one fix is enough.
			return problem.New(problem.ModelLoad, fmt.Sprintf("Cannot load %s: %s", filepath.Base(path), re.Text))
		}
		return problem.New(problem.ModelLoad, fmt.Sprintf(
			"Cannot load %s: %s. Choose another model in the chat's model menu or under Models.", filepath.Base(path), strings.TrimSuffix(re.Text, ".")))
	case errors.As(err, &re):
		// The engine states facts in lower case ("the JSON schema cannot
		// be turned into a grammar; …"); a person reads a sentence.
		t := strings.TrimSuffix(re.Text, ".")
		if t != "" {
			t = strings.ToUpper(t[:1]) + t[1:]
		}
		return problem.New(problem.BadRequest, t+".")
	case errors.As(err, new(*problem.Error)):
		return err
	}
	// Anything else (the supervisor closed, the ring failed after its
	// first token, the protocol broken) in the engine's own words.
	return problem.Wrap(problem.ChatFailed, said(err), err)
}

func chatStats(st runner.Stats, model string) apitype.ChatStats {
	out := apitype.ChatStats{
		PromptTokens: st.PromptTokens, CachedTokens: st.CachedTokens, CompletionTokens: st.CompletionTokens,
		PromptMS: st.PromptMS, TotalMS: st.TotalMS, StopReason: st.Reason, Model: model,
	}
	if st.DecodeMS > 0 {
		out.TokensPerSecond = float64(st.DecodeTokens) / st.DecodeMS * 1000
	}
	if st.PromptMS > 0 {
		out.PromptPerSecond = float64(st.PromptTokens-st.CachedTokens) / st.PromptMS * 1000
	}
	if st.Drafted > 0 {
		out.Drafted, out.DraftAcceptance = st.Drafted, float64(st.Accepted)/float64(st.Drafted)
	}
	return out
}

// SettingsChanged implements api.SettingsWatcher: a ring job kept from the
// last chat ends now, rather than hold the workers' memory until its time
// is up, when the next chat could not use it (another model selected,
// another context size) or keeping was turned off.
func (b *Agent) SettingsChanged(before, after apitype.Settings) {
	switch {
	case before.Model != after.Model:
		b.endKeptRing("the selected model changed")
	case before.ContextTokens != after.ContextTokens:
		b.endKeptRing("the context size changed")
	case after.RingKeepSeconds == 0 && before.RingKeepSeconds != 0:
		b.endKeptRing("keeping ring jobs was turned off")
	}
	if (before.GPU == config.GPUOff) != (after.GPU == config.GPUOff) {
		b.restartEngine("the gpu setting changed to " + after.GPU)
	}
}

// restartEngine ends the kept ring job and the engine child once no chat
// holds it, without waiting for it: the next chat or ring job starts a
// fresh child, which reads the gpu setting as it starts (GPU backends load
// once per process).
func (b *Agent) restartEngine(why string) {
	b.endKept(func(ctx context.Context, ended error) {
		if ended != nil && !errors.Is(ended, runner.ErrClosed) {
			b.log.Info("cannot end the kept ring job before restarting the engine", "why", why, "err", ended)
		}
		switch err := b.sup.Restart(ctx); {
		case err == nil:
			b.log.Info("restarted the engine process", "why", why)
		case !errors.Is(err, runner.ErrClosed):
			b.log.Warn("cannot restart the engine process", "why", why, "err", err)
		}
	})
}

// aloneGPULayers is the planner's n for this device alone (0 when its gpu
// setting is off, or no plan: the CPU runs every layer).
func (b *Agent) aloneGPULayers(path string, nCtx int) int {
	pl, err := b.plans().Next(planner.Request{Model: path, ContextTokens: nCtx, Alone: true})
	if err != nil || len(pl.Plan.Ring) != 1 {
		return 0
	}
	return pl.Plan.Ring[0].N
}

// watchContribute ends the kept ring job when contributing is turned off
// on this device (the person takes it out of the ring's use), until Close.
func (b *Agent) watchContribute(n *node.Node) {
	events, stop := n.Watch()
	b.mu.Lock()
	b.stopWatch = stop
	b.mu.Unlock()
	b.bg.Add(1)
	go func() {
		defer b.bg.Done()
		for ev := range events {
			if ev.Kind == "contribute" && ev.On != nil && !*ev.On {
				b.endKeptRing("contributing was turned off")
			}
		}
	}()
}

// endKeptWait bounds how long endKeptRing waits for the engine child: a
// chat running now holds it, and the job that chat keeps is the one to end.
const endKeptWait = 2 * time.Minute

// endKeptRing ends the ring job the engine child keeps, if any, without
// waiting for it (a chat may hold the child).
func (b *Agent) endKeptRing(why string) {
	b.endKept(func(_ context.Context, err error) {
		switch {
		case err == nil:
			b.log.Info("ended the kept ring job, if any", "why", why)
		case !errors.Is(err, runner.ErrClosed):
			b.log.Warn("cannot end the kept ring job", "why", why, "err", err)
		}
	})
}

// endKept forgets the kept job and, in the background (a chat may hold the
// engine child for up to endKeptWait), ends it in the child, then calls
// then with EndRingJob's error.
func (b *Agent) endKept(then func(ctx context.Context, err error)) {
	b.keep(nil, 0)
	b.bg.Add(1)
	go func() {
		defer b.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), endKeptWait)
		defer cancel()
		then(ctx, b.sup.EndRingJob(ctx))
	}()
}

// Close ends the engine child. A ring job it keeps ends first (the agent
// is quitting), so that the workers free its windows at once; a chat
// still running delays that by 2 s at most.
func (b *Agent) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	if err := b.sup.EndRingJob(ctx); err != nil && !errors.Is(err, runner.ErrClosed) {
		b.log.Info("cannot end the kept ring job before quitting", "err", err)
	}
	cancel()
	b.mu.Lock()
	stop := b.stopWatch
	b.stopWatch = nil
	b.mu.Unlock()
	if stop != nil {
		stop()
	}
	err := b.sup.Close()
	b.bg.Wait()
	return err
}

// transferProgress turns the runner's weight-transfer reports into progress
// bars, one per worker ("transfer:ID"); end removes those still shown.
func (b *Agent) transferProgress(job *ringJob) (report func(runner.Progress), end func()) {
	if b.work == nil {
		return nil, func() {}
	}
	var mu sync.Mutex
	shown := map[string]bool{}
	report = func(p runner.Progress) {
		id := "transfer:" + p.Device.String()
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if !shown[id] {
			name := job.names[p.Device].Name
			if name == "" {
				name = p.Device.Short()
			}
			b.work.Begin(now, id, "transfer", "Sending weights to "+name,
				"The first reply on this plan waits for them; the device keeps them for later replies.", 0)
			shown[id] = true
		}
		b.work.Progress(now, id, p.Done, p.Total)
		if p.Done >= p.Total {
			b.work.End(id)
		}
	}
	end = func() {
		mu.Lock()
		defer mu.Unlock()
		for id := range shown {
			b.work.End(id)
		}
	}
	return report, end
}
