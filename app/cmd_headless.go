package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"homering/app/agent"
	"homering/app/api"
	"homering/app/api/apitype"
	"homering/app/api/client"
	"homering/app/config"
	"homering/app/node"
	"homering/app/problem"
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
	if err := runAgent(ctx, f); err != nil {
		log.Error("agent stopped", "err", err)
		fmt.Fprintf(e.stderr, "homering: %v\n", err)
		return 1
	}
	return 0
}

// runAgent is the composition root of the agent: config, identity, node,
// the agent that owns them (app/agent), API; shutdown in reverse order.
func runAgent(ctx context.Context, f agentFlags) error {
	log, pin, model := f.log, f.iface, f.model
	dir, err := config.Dir(os.Getenv)
	if err != nil {
		return err
	}
	if c, ok := runningAgent(ctx, dir, 0); ok { // the tray's second launch opens its window instead
		return fmt.Errorf("an agent already runs for %s (pid %d)", dir, c.Info.PID)
	}
	if err := writableDir(dir); err != nil {
		return err
	}
	// A damaged config file does not keep the agent from starting: it is
	// set aside and the agent runs on the defaults, saying so (damaged.go).
	var damaged []apitype.Problem
	cfg, err := config.Load(dir)
	if err != nil {
		damaged = append(damaged, setAside(dir, config.FileName, err))
		cfg = config.Default()
	}
	if _, err := config.LoadSettings(dir); err != nil {
		damaged = append(damaged, setAside(dir, config.SettingsFile, err))
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
		damaged = append(damaged, setAside(dir, identity.PairedFile, err))
		paired = identity.Paired{}
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
	for _, p := range damaged {
		n.SetProblem(p)
		fmt.Fprintf(f.stderr, "homering: %s\n", p.Text) // one sentence, not a stack of errors
	}

	ln, token, err := listenControl(dir, cfg.APIAddr)
	if err != nil {
		return err
	}
	// The compatible APIs' fixed address (after the control API, so that a
	// second agent of this user has already stopped above).
	// It listens beyond loopback only while Settings share it (chatlistener.go).
	chat := newChatListener(chatAPIPort(dir, f.apiPort), sharedAPI(dir), log.With("component", "chat-api"))
	chatURL, chatProblem := chat.State()
	if chatProblem != nil {
		fmt.Fprintf(f.stderr, "homering: %s\n", chatProblem.Text) // one sentence, not a stack of errors
	}
	a := agent.New(agent.Options{Dir: dir, Model: model, Log: log, Node: n}) // chat, ring jobs, planner, background profile: app/agent
	defer a.Close()
	srv := &api.Server{Agent: a, Log: log.With("component", "api"), Token: token, Chat: a, ChatListener: chat}
	info := apitype.Info{URL: "http://" + ln.Addr().String(), Token: srv.Token, PID: os.Getpid()}
	b, _ := json.Marshal(info)
	infoPath := filepath.Join(dir, apitype.InfoFile)
	if err := config.WriteFile(infoPath, b); err != nil {
		_ = ln.Close()
		chat.close()
		return err
	}
	defer os.Remove(infoPath)
	// Kept after the agent stops (api.json is not): the next start listens
	// there again with the same token (listenControl).
	if err := config.WriteFile(filepath.Join(dir, lastControlFile), b); err != nil {
		log.Warn("the control API's address cannot be kept for the next start", "err", err)
	}
	// As Jupyter does: a link that opens the UI already authorised (the
	// token becomes an HttpOnly cookie and leaves the address bar).
	fmt.Fprintf(f.stderr, "homering: the chat and the device map are at %s/?token=%s (a link with this device's key: keep it to yourself)\n", info.URL, info.Token)
	log.Info("agent started", "id", id.ID, "config", dir, "api", info.URL, "chat_api", chatURL, "chat_api_shared", chat.expose, "contribute", cfg.Contribute)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var agentErr, apiErr error
	wg.Add(3)
	go func() {
		defer wg.Done()
		chat.serve(ctx, srv.ChatAPIHandler())
	}()
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

// lastControlFile keeps the control API's address and token (apitype.Info)
// across restarts, in the config directory with api.json's permissions: a
// page of the UI left open reconnects by itself to the same address with the
// cookie it holds, as a person expects after Quit and start or an update.
const lastControlFile = "api-last.json"

// listenControl opens the control API (and the UI) on addr, a loopback
// address. With port 0 it first tries the address and token of the last
// start (lastControlFile); when that port is taken, or there was none, a
// free port and a new token.
func listenControl(dir, addr string) (net.Listener, string, error) {
	if ap, err := netip.ParseAddrPort(addr); err == nil && ap.Port() == 0 {
		if b, err := os.ReadFile(filepath.Join(dir, lastControlFile)); err == nil {
			var last apitype.Info
			if json.Unmarshal(b, &last) == nil && len(last.Token) == 64 {
				host := strings.TrimPrefix(last.URL, "http://")
				if lap, err := netip.ParseAddrPort(host); err == nil && lap.Addr() == ap.Addr() && lap.Port() != 0 {
					if ln, err := net.Listen("tcp", host); err == nil {
						return ln, last.Token, nil
					}
				}
			}
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("control API on %s: %w", addr, err)
	}
	token := make([]byte, 32)
	if _, err := rand.Read(token); err != nil {
		_ = ln.Close() // the error to report is the token's
		return nil, "", err
	}
	return ln, hex.EncodeToString(token), nil
}

// chatAPIPort is the compatible APIs' port: the flag's (or
// HOMERING_API_PORT's) when given, else the settings' (their default when
// settings.json cannot be read: the agent reports that file elsewhere).
func chatAPIPort(dir string, flagPort int) chatPort {
	if flagPort != 0 {
		return chatPort{port: flagPort, fromFlag: true}
	}
	s, err := config.LoadSettings(dir)
	if err != nil || s.APIPort < 1 || s.APIPort > 65535 { // a hand-edited file is not a random port
		return chatPort{port: config.DefaultAPIPort}
	}
	return chatPort{port: s.APIPort}
}

// sharedAPI is whether settings.json shares the compatible APIs on the
// network: Expose with a key (a file without one shares nothing).
func sharedAPI(dir string) bool {
	s, err := config.LoadSettings(dir)
	return err == nil && s.Expose && s.APIKey != ""
}

// chatPort is a port for the compatible APIs and where it was chosen.
type chatPort struct {
	port     int
	fromFlag bool // --api-port or HOMERING_API_PORT, not the settings
}

// listenChatAPI opens the compatible APIs' loopback port. When it cannot,
// the agent runs on without them (the chat in the UI does not need them)
// and the problem, one sentence naming the port and where to change it, is
// printed once and shown in the Status.
func listenChatAPI(p chatPort) (net.Listener, *apitype.Problem) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port))
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	cause := err.Error()
	if se := (*os.SyscallError)(nil); errors.As(err, &se) {
		cause = se.Err.Error() // "permission denied", without the address again
	}
	why := "cannot be opened (" + cause + ")"
	if addrInUse(err) {
		why = "is taken by another program"
	}
	where := "choose another in Settings (API port) or start Homering with --api-port N"
	if p.fromFlag {
		where = "give another with --api-port (or HOMERING_API_PORT), or leave both out for the port in Settings"
	}
	pr := problem.Make(problem.ChatAPIPort, fmt.Sprintf("Port %d of the OpenAI, Anthropic and Ollama compatible APIs %s; %s.", p.port, why, where))
	return nil, &pr
}

// addrInUse reports whether a listen failed because the port is taken
// (EADDRINUSE; Windows says WSAEADDRINUSE, 10048).
func addrInUse(err error) bool {
	var errno syscall.Errno
	return errors.As(err, &errno) && (errno == syscall.EADDRINUSE || errno == 10048)
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
