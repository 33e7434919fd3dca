package app

import (
	"flag"
	"log/slog"
	"os"
)

// agentFlags are the flags of the agent, with or without a tray.
type agentFlags struct {
	iface string // discovery interface; "" = every suitable one
	model string // GGUF to chat with instead of the one in Settings
	log   *slog.Logger
}

// parseAgentFlags parses the agent's flags (each mirrored by an env variable)
// and builds its logger; ok=false means the arguments were bad (exit 2).
func parseAgentFlags(name string, e env) (agentFlags, bool) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	iface := fs.String("interface", os.Getenv("HOMERING_INTERFACE"), "use only this network interface for discovery (env HOMERING_INTERFACE)")
	debug := fs.Bool("debug", os.Getenv("HOMERING_DEBUG") != "", "log debug messages (env HOMERING_DEBUG)")
	model := fs.String("model", os.Getenv("HOMERING_MODEL"), "chat with this GGUF `file` instead of the one chosen in Settings (env HOMERING_MODEL)")
	if err := fs.Parse(e.args); err != nil {
		return agentFlags{}, false
	}
	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
	return agentFlags{iface: *iface, model: *model, log: log}, true
}
