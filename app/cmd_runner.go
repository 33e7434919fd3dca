package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"homering/engine/runner"
)

// cmdRunner is `homering runner`: the engine child process the agent starts
// (engine/runner). It speaks JSON lines on stdin/stdout and logs to stderr;
// people never start it themselves.
func cmdRunner(ctx context.Context, e env) int {
	usage := "Usage: homering runner\n\nThe engine process the agent starts; it reads JSON lines on stdin. Not for people.\n"
	if exit, ok := parseFlags(newFlags(e, "runner", usage), e.args); !ok {
		return exit
	}
	level := slog.LevelInfo
	if os.Getenv("HOMERING_DEBUG") != "" {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level})).With("component", "runner", "pid", os.Getpid())
	if err := runner.Main(ctx, e.stdin, log); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(e.stderr, "homering runner: %v\n", err)
		return 1
	}
	return 0
}
