package app

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
)

// agentFlags are the flags of the agent, with or without a tray.
type agentFlags struct {
	iface string // discovery interface; "" = every suitable one
	model string // GGUF to chat with instead of the one in Settings
	// apiPort is the compatible APIs' port instead of the settings'; 0: the settings'.
	apiPort int
	log     *slog.Logger
	stderr  io.Writer // for the few sentences a person must read, beside the log
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
	apiPort := fs.Int("api-port", 0, "serve the OpenAI, Anthropic and Ollama compatible APIs on this loopback `port` instead of Settings' API port (default 47471) (env HOMERING_API_PORT)")
	if exit, ok := parseFlags(fs, e.args); !ok {
		return agentFlags{}, exit, false
	}
	if *apiPort == 0 && os.Getenv("HOMERING_API_PORT") != "" {
		p, err := strconv.Atoi(os.Getenv("HOMERING_API_PORT"))
		if err != nil || p < 1 || p > 65535 {
			fmt.Fprintf(e.stderr, "homering %s: HOMERING_API_PORT=%q is not a TCP port; give 1-65535.\n", name, os.Getenv("HOMERING_API_PORT"))
			return agentFlags{}, 2, false
		}
		*apiPort = p
	}
	if *apiPort < 0 || *apiPort > 65535 {
		fmt.Fprintf(e.stderr, "homering %s: --api-port %d is not a TCP port; give 1-65535.\n", name, *apiPort)
		return agentFlags{}, 2, false
	}
	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
	return agentFlags{iface: *iface, model: *model, apiPort: *apiPort, log: log, stderr: e.stderr}, 0, true
}
