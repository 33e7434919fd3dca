package agent

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"homering/app/api/apitype"
	"homering/app/config"
	"homering/app/node"
	"homering/app/planner"
	"homering/engine/profile"
	"homering/engine/profile/sysinfo"
	"homering/engine/runner"
	"homering/halda"
)

// Agent is the one owner of the agent's state: the node (peers, pairing,
// control links), the planner, the engine child that runs every chat (on
// this device alone or as the head of a ring: chat.go, ring.go), the ring
// job kept for the next turn, the calibration learnt from runs
// (profile_calib.go), the background measurement of this device
// (profile_bg.go) and the progress bars (Work). It is the API's Chatter and
// the node's Worker: a head's job makes its runner child serve (ring.go).
type Agent struct {
	sup      *runner.Supervisor // non-nil
	dir      string             // config directory (settings.json)
	override string             // --model; "" reads the settings
	threads  int
	log      *slog.Logger
	// problems shows engine failures in the node's Status (the tray and UI
	// show them); nil: only the chat's error says it.
	problems problemSink

	// work shows weight transfers as progress bars (the API's Work list);
	// nil: not shown.
	work *Work
	// meter shows each chat's wait for its first token in work and keeps
	// what chats measured (measured.go).
	meter *chatMeter
	// pulls are the model downloads (pull.go).
	pulls pulls

	// node asks peers for profiles and jobs; nil: this device alone.
	node *node.Node
	// selfName names this device in plans without a node (tests): "" is
	// "self".
	selfName string
	// prof measures this device in the background; a chat stops it
	// (profile_bg.go). nil: no background measurement.
	prof *bgProfile
	// planner makes every plan (app/planner); guarded by mu, read
	// through plans().
	planner *planner.Planner
	// self reads this device's cached profile (cachedSelf); set once.
	selfOnce sync.Once
	self     func() (halda.Device, bool)
	// loadProfile, ratios and readMemory are Options.LoadProfile,
	// Options.Ratios and Options.ReadMemory.
	loadProfile func(configDir string) (profile.Profile, bool, error)
	ratios      func(model string, deviceIDs []string) map[string][]float64
	readMemory  func() (sysinfo.Memory, error)
	ring        ringMemory
	look        looks         // the device map's samplers (looks.go)
	apiSet      settingsCache // the settings as the API last read or saved them (settings.go)
	drafts      draftCache    // the speculative drafts picked for chat models (draft.go)

	mu        sync.Mutex // guards running, stopWatch, planner, perByte and starts
	running   map[*chatRun]struct{}
	stopWatch func() // ends watchContribute's subscription; nil when none
	// perByte is each model's tokens per byte of its last prompt, which
	// fit.go estimates prompts by; nil until the first.
	perByte map[string]float64
	// starts are the trimmed conversations' first kept messages (fit.go's
	// rememberStart); nil until the first.
	starts map[[32]byte]int

	// bg counts the goroutines that end a kept ring job (endKeptRing,
	// watchContribute); Close waits for them.
	bg sync.WaitGroup
}

// Options are what the composition root gives the agent.
type Options struct {
	Dir   string       // config directory: settings.json, profiles, calibration, the identity the ring links use
	Model string       // a GGUF to chat with instead of the one in Settings (--model); "" reads the settings
	Log   *slog.Logger // non-nil
	// Node is this device on the network; nil: this device alone, with no
	// peers, problems or ring jobs (tests).
	Node *node.Node
	// LoadProfile reads this device's cached measured profile from the
	// config directory without measuring; nil: engine/profile.LoadCached.
	LoadProfile func(configDir string) (profile.Profile, bool, error)
	// Ratios are the calibration ratios the planner scales each device's
	// rates by, per device ID, for a model file; nil: those this agent
	// learnt from its runs (profile_calib.go).
	Ratios func(model string, deviceIDs []string) map[string][]float64
	// ReadMemory reads this device's memory as plans count it (a measured
	// profile's speeds, today's memory); nil: engine/profile/sysinfo's.
	ReadMemory func() (sysinfo.Memory, error)
}

// New builds the agent: the engine child's supervisor (the child starts on
// the first chat or ring job), the planner, and the background measurement
// (off with HOMERING_PROFILE_QUIET=off). With a node, the agent reports
// problems to it, serves heads' ring jobs and plans with its peers. Run
// starts the background work; Close ends the engine child.
func New(o Options) *Agent {
	b := &Agent{
		dir:      o.Dir,
		override: o.Model,
		threads:  engineThreads(os.Getenv),
		log:      o.Log,
		running:  map[*chatRun]struct{}{},
		work:     NewWork(), // weight transfers to ring workers show as progress bars

		loadProfile: o.LoadProfile,
		ratios:      o.Ratios,
		readMemory:  o.ReadMemory,
	}
	if b.readMemory == nil {
		b.readMemory = sysinfo.ReadMemory
	}
	store := ""
	if o.Dir != "" {
		store = filepath.Join(o.Dir, LoadTimesFile)
	}
	b.meter = newChatMeter(b.work, time.Now, store)
	// The child reads the gpu setting when it starts (runner.LoadGPU):
	// SettingsChanged restarts it when the setting changes.
	// What the engine's ring links refuse counts with what the node's
	// links refuse: one set of counts in status and doctor.
	var onRefused func(map[string]uint64)
	if o.Node != nil {
		onRefused = o.Node.CountRefusals
	}
	b.sup = runner.New(runner.Options{Command: func() *exec.Cmd { return b.gpuSetting(runnerCommand()) }, Log: o.Log.With("component", "runner"),
		OnRefused: onRefused})
	if n := o.Node; n != nil {
		b.problems = n
		b.node = n
		n.SetWorker(b)
		b.watchContribute(n) // contributing off ends a kept ring job (chat.go)
	}
	b.planner = b.newPlanner(o.Node)
	quiet, off, set := profileQuietFromEnv(os.Getenv)
	if off {
		b.log.Info("profile: background measurement is off (HOMERING_PROFILE_QUIET=off)")
	} else {
		b.prof = newBgProfile(b.dir, b.threads, func() string { path, _ := b.model(); return path }, b.work, b.log)
		b.prof.command = func(args ...string) *exec.Cmd { return b.gpuSetting(selfCommand(args...)) }
		if set {
			b.prof.quiet = quiet
		}
	}
	return b
}

// Run runs the agent's background work until ctx ends or the node stops:
// the node (discovery, links, pairing), the planner's looks at the paired
// peers, and the measurement of this device when due (never during a
// chat). It returns the node's error.
func (b *Agent) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	if b.prof != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.prof.Run(ctx) // stopping it ends its child and waits
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		b.plans().Run(ctx)
	}()
	var err error
	if b.node != nil {
		err = b.node.Run(ctx)
	} else {
		<-ctx.Done()
	}
	cancel()
	wg.Wait()
	return err
}

// Planner is the agent's one planner: the device map and the model list
// show the plans the next chat runs.
func (b *Agent) Planner() *planner.Planner { return b.plans() }

// Work is the agent's list of long work (weight transfers, the background
// measurement) that the UI shows as progress bars.
func (b *Agent) Work() *Work { return b.work }

// problemSink is the part of app/node the agent reports problems to.
type problemSink interface {
	SetProblem(apitype.Problem)
	ClearProblem(code string)
}

type chatRun struct {
	conv   string
	cancel context.CancelFunc
}

// runnerCommand starts this binary as `homering runner`.
func runnerCommand() *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exec.Command(exe, "runner")
}

// gpuSetting passes this device's gpu setting to a child it starts: off,
// the child loads no GPU backend (runner.EnvGPU=off; runner.LoadGPU).
func (b *Agent) gpuSetting(cmd *exec.Cmd) *exec.Cmd {
	if b.settings().UseGPU() {
		return cmd
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, runner.EnvGPU+"=off")
	return cmd
}

// engineThreads is how many CPU threads the engine uses: HOMERING_THREADS,
// else half the logical CPUs (about the physical cores, as llama.cpp picks).
// ggml's threads spin-wait for each other, so one thread more than the CPU
// can give turns a busy machine's 500 tok/s into 2 (measured on 2 shared
// cores: stories260K at 2 threads under load took 88 s for 200 tokens, at 1
// thread 0.25 s).
func engineThreads(getenv func(string) string) int {
	if n, err := strconv.Atoi(getenv("HOMERING_THREADS")); err == nil && n > 0 {
		return n
	}
	return max(1, runtime.NumCPU()/2)
}

// settings are this device's saved settings (the defaults when the file is
// unreadable), with the model given on the command line, if any, as Model.
func (b *Agent) settings() config.Settings {
	st, err := config.LoadSettings(b.dir)
	if err != nil {
		b.log.Warn("settings unreadable; using defaults", "err", err)
		st = config.DefaultSettings()
	}
	if b.override != "" {
		st.Model = b.override
	}
	if strings.EqualFold(strings.TrimSpace(os.Getenv(runner.EnvGPU)), "off") {
		st.GPU = config.GPUOff // the environment's off wins, as in runner.FindGPUDir
	}
	return st
}

// model returns the selected model's path and the context to run it with.
func (b *Agent) model() (string, int) {
	st := b.settings()
	return st.Model, st.ContextTokens
}
