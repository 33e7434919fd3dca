package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// Version is the app version, set at link time with -ldflags "-X homering/app.Version=…".
var Version = "0.1.0-dev"

// env is what a subcommand gets from the process: arguments after its name and
// the standard streams. Tests build one with buffers instead of the real streams.
type env struct {
	args   []string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// command is one subcommand. run returns the process exit status.
type command struct {
	summary string
	run     func(ctx context.Context, e env) int
}

// commands lists every subcommand. Each lives in its own cmd_*.go file.
func commands() map[string]command {
	return map[string]command{
		"run":        {"generate text from a GGUF on this machine alone", cmdRun},
		"inspect":    {"print a GGUF's architecture, layers and tensor types", cmdInspect},
		"gen-model":  {"write a GGUF with random weights (tests, benchmarks)", cmdGenModel},
		"plan":       {"print Halda's plan for device profiles and a model", cmdPlan},
		"profile":    {"measure this device (and a model) for Halda, cached per hardware", cmdProfile},
		"version":    {"print the version", cmdVersion},
		"headless":   {"run the agent without tray or window until SIGTERM", cmdHeadless},
		"peers":      {"list devices seen (mDNS, manual); peers add HOST[:PORT]", cmdPeers},
		"doctor":     {"say what discovery tries and why a device may be invisible", cmdDoctor},
		"pair":       {"show a pairing code, or enter one: pair DEVICE CODE", cmdPair},
		"unpair":     {"forget a paired device on both sides", cmdUnpair},
		"contribute": {"share this machine with paired devices: contribute on|off", cmdContribute},
		"id":         {"print this device's ID", cmdID},
		"runner":     {"the engine process the agent starts (not for people)", cmdRunner},
		"tray":       {"the agent with a tray icon (what `homering` alone runs)", cmdTray},
		"ui":         {"open the chat and device-map window of the running agent", cmdUI},
		"chat":       {"chat with the running agent's model across the ring: chat [-m FILE] PROMPT", cmdChat},
		"status":     {"show the next chat's plan and the last ring: windows, predicted vs measured ms, memory pressure", cmdStatus},
		"settings":   {"print this device's settings, or change them: settings KEY=VALUE ...", cmdSettings},
		"pull":       {"download a GGUF by URL or Hugging Face reference into the model folder", cmdPull},
	}
}

// Main runs the subcommand named in args and returns the exit status.
func Main(args []string) int {
	return mainWith(args, env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr})
}

func mainWith(args []string, e env) int {
	cmds := commands()
	if len(args) == 0 {
		args = []string{"tray"} // the app: agent with tray icon
	}
	switch {
	case isHelpFlag(args[0]) || (args[0] == "help" && len(args) == 1):
		usage(e.stdout, cmds)
		return 0
	case args[0] == "help":
		args = []string{args[1], "-h"} // homering help CMD is homering CMD -h
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "homering: unknown command %q.\n", args[0])
		usage(e.stderr, cmds)
		return 2
	}
	e.args = args[1:]
	if helpRequested(e.args) {
		// Help is an answer, not an error: the command's usage and flags go
		// to stdout (homering run -h | less) and it exits 0. Every command
		// parses its flags before doing anything, so with the -h alone it
		// prints its usage and returns (TestEveryCommandHelp).
		e.args, e.stderr = []string{"-h"}, e.stdout
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return c.run(ctx, e)
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "Usage: homering COMMAND [flags] [args]\n\nCommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'homering help COMMAND' (or 'homering COMMAND -h') for a command's usage and flags.")
}

func cmdVersion(_ context.Context, e env) int {
	if exit, ok := parseFlags(newFlags(e, "version", "Usage: homering version\n\nPrints the version of this build.\n"), e.args); !ok {
		return exit
	}
	fmt.Fprintf(e.stdout, "homering %s\n", Version)
	return 0
}
