package app

import (
	"log/slog"
	"os"
)

// agentFlags are the flags of the agent, with or without a tray.
type agentFlags struct {
	iface string // discovery interface; "" = every suitable one
	model string // GGUF to chat with instead of the one in Settings
	log   *slog.Logger
}

// agentUsage is the help of the commands that run the agent.
var agentUsage = map[string]string{
	"headless": `Usage: homering headless [flags]

Runs the agent (discovery, pairing, the chat and compatible APIs) without a
tray icon or window until interrupted (Ctrl-C, SIGTERM).

Flags:
`,
	"tray": `Usage: homering [tray] [flags]

Runs the agent with a tray icon: what starting Homering does. A second launch
opens the running agent's window instead.

Flags:
`,
}

// parseAgentFlags parses the agent's flags (each mirrored by an env variable)
// and builds its logger; ok=false means there is nothing to run, with the
// exit status: 0 after -h, 2 after a bad flag.
func parseAgentFlags(name string, e env) (f agentFlags, exit int, ok bool) {
	fs := newFlags(e, name, agentUsage[name])
	iface := fs.String("interface", os.Getenv("HOMERING_INTERFACE"), "use only this network interface for discovery (env HOMERING_INTERFACE)")
	debug := fs.Bool("debug", os.Getenv("HOMERING_DEBUG") != "", "log debug messages (env HOMERING_DEBUG)")
	model := fs.String("model", os.Getenv("HOMERING_MODEL"), "chat with this GGUF `file` instead of the one chosen in Settings (env HOMERING_MODEL)")
	if exit, ok := parseFlags(fs, e.args); !ok {
		return agentFlags{}, exit, false
	}
	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
	return agentFlags{iface: *iface, model: *model, log: log}, 0, true
}
