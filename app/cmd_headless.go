package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"homering/app/agent"
	"homering/app/api"
	"homering/app/api/apitype"
	"homering/app/api/client"
	"homering/app/config"
	"homering/app/node"
	"homering/discovery/identity"
	"homering/discovery/mdns"
)

// cmdHeadless runs the agent without tray or window until SIGINT/SIGTERM.
func cmdHeadless(ctx context.Context, e env) int {
	f, exit, ok := parseAgentFlags("headless", e)
	if !ok {
		return exit
	}
	log := f.log
	if err := runAgent(ctx, log, f.iface, f.model); err != nil {
		log.Error("agent stopped", "err", err)
		fmt.Fprintf(e.stderr, "homering: %v\n", err)
		return 1
	}
	return 0
}

// runAgent is the composition root of the agent: config, identity, node,
// the agent that owns them (app/agent), API; shutdown in reverse order.
func runAgent(ctx context.Context, log *slog.Logger, pin, model string) error {
	dir, err := config.Dir(os.Getenv)
	if err != nil {
		return err
	}
	if c, ok := runningAgent(ctx, dir, 0); ok { // the tray's second launch opens its window instead
		return fmt.Errorf("an agent already runs for %s (pid %d)", dir, c.Info.PID)
	}
	cfg, err := config.Load(dir)
	if err != nil {
		return err
	}
	if pin != "" {
		cfg.Interface = pin
	}
	id, err := identity.LoadOrCreate(dir, time.Now(), rand.Reader)
	if err != nil {
		return err
	}
	paired, err := identity.LoadPaired(dir)
	if err != nil {
		return err
	}
	var runBytes [4]byte
	if _, err := rand.Read(runBytes[:]); err != nil {
		return err
	}
	host, _ := os.Hostname()
	log = log.With("device", id.ID.Short())
	n := node.New(node.Options{
		Dir: dir, Config: cfg, Identity: id, Paired: paired, App: Version, Hostname: host,
		Log: log, Now: time.Now, Random: rand.Reader, Run: mdns.NewRun(runBytes),
	})

	ln, err := net.Listen("tcp", cfg.APIAddr)
	if err != nil {
		return fmt.Errorf("control API on %s: %w", cfg.APIAddr, err)
	}
	token := make([]byte, 32)
	if _, err := rand.Read(token); err != nil {
		return err
	}
	a := agent.New(agent.Options{Dir: dir, Model: model, Log: log, Node: n}) // chat, ring jobs, planner, background profile: app/agent
	defer a.Close()
	srv := &api.Server{Agent: a, Log: log.With("component", "api"), Token: hex.EncodeToString(token), Chat: a}
	info := apitype.Info{URL: "http://" + ln.Addr().String(), Token: srv.Token, PID: os.Getpid()}
	b, _ := json.Marshal(info)
	infoPath := filepath.Join(dir, apitype.InfoFile)
	if err := config.WriteFile(infoPath, b); err != nil {
		_ = ln.Close()
		return err
	}
	defer os.Remove(infoPath)
	log.Info("agent started", "id", id.ID.String(), "config", dir, "api", info.URL, "contribute", cfg.Contribute)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var agentErr, apiErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer cancel()
		agentErr = a.Run(ctx) // the node, the planner's looks at peers, this device's measurement when due
	}()
	go func() {
		defer wg.Done()
		defer cancel()
		apiErr = api.Serve(ctx, ln, srv.Handler(), log)
	}()
	wg.Wait()
	log.Info("agent stopped")
	return errors.Join(agentErr, apiErr)
}

// agentClient finds the running agent of this config directory.
func agentClient() (*client.Client, string, error) {
	dir, err := config.Dir(os.Getenv)
	if err != nil {
		return nil, "", err
	}
	c, err := client.FromDir(dir)
	return c, dir, err
}

// fail prints err as one line and returns exit status 1.
func fail(w io.Writer, err error) int {
	fmt.Fprintf(w, "homering: %v\n", err)
	return 1
}

func printJSON(w io.Writer, v any) int {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return 1
	}
	return 0
}
