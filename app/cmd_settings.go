package app

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"homering/app/api/apitype"
	"homering/app/config"
)

const settingsUsage = `Usage: homering settings [--json] [KEY=VALUE ...]

Prints this device's settings, or changes the named ones through the running
agent, as its Settings page does. Keys: name, model, model_dir,
context_tokens, memory_budget, ring_keep_seconds, expose, api_key, gpu,
api_port (the compatible APIs' port; applies when the agent restarts), draft
(the speculative draft model of greedy chats: auto picks a small model of the
chat model's family from the model folders, off uses none, else a GGUF file).
expose=true shares the compatible APIs (not the control API) with other
computers on the network at once, no restart; they must then send api_key
(16 characters or more) as "Authorization: Bearer KEY" or "x-api-key: KEY".
expose=false closes them to the network at once.

Flags:
`

// cmdSettings is `homering settings [KEY=VALUE ...]`: prints this device's
// settings, or changes the named ones through the running agent (the same
// as its Settings page, so the device map and the next chat follow at once).
func cmdSettings(ctx context.Context, e env) int {
	fs := newFlags(e, "settings", settingsUsage)
	asJSON := fs.Bool("json", false, "print the settings as JSON")
	if exit, ok := parseFlags(fs, e.args); !ok {
		return exit
	}
	c, _, err := agentClient()
	if err != nil {
		return fail(e.stderr, err)
	}
	s, err := c.Settings(ctx)
	if err != nil {
		return fail(e.stderr, err)
	}
	if fs.NArg() > 0 {
		for _, kv := range fs.Args() {
			if err := setSetting(&s, kv); err != nil {
				fmt.Fprintf(e.stderr, "homering: %v\n", err)
				return 2
			}
		}
		if s, err = c.SaveSettings(ctx, s); err != nil {
			return fail(e.stderr, err)
		}
	}
	if *asJSON {
		return printJSON(e.stdout, s)
	}
	budget := "no cap"
	if s.MemoryBudget > 0 {
		budget = fmt.Sprintf("%d bytes", s.MemoryBudget)
	}
	gpu := s.GPU
	if gpu == "" {
		gpu = "on"
	}
	draft := s.Draft
	if draft == "" {
		draft = "auto (a small model of the chat model's family, when one is in the model folders)"
	}
	fmt.Fprintf(e.stdout, "name               %s\nmodel              %s\nmodel_dir          %s\ncontext_tokens     %d\nmemory_budget      %s\nring_keep_seconds  %d\nexpose             %v (shares the chat API on the network; applies at once)\ngpu                %s\napi_port           %d (applies when the agent restarts)\ndraft              %s\n",
		s.Name, s.Model, s.ModelDir, s.ContextTokens, budget, s.RingKeepSeconds, s.Expose, gpu, s.APIPort, draft)
	return 0
}

// setSetting applies one KEY=VALUE; memory_budget takes bytes or a size
// with a unit (512MiB, 1.5GiB, 2GB).
func setSetting(s *apitype.Settings, kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok {
		return fmt.Errorf("%q is not KEY=VALUE; keys: name, model, model_dir, context_tokens, memory_budget, ring_keep_seconds, expose, api_key, gpu, api_port, draft", kv)
	}
	bad := func(what string) error { return fmt.Errorf("%s=%q: %s", k, v, what) }
	switch k {
	case "name":
		s.Name = v
	case "model":
		s.Model = config.ExpandHome(v)
	case "model_dir":
		s.ModelDir = config.ExpandHome(v) // quoted ~ reaches here unexpanded
	case "api_key":
		s.APIKey = v
	case "context_tokens", "ring_keep_seconds", "api_port":
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return bad("give a whole number of 0 or more")
		}
		switch k {
		case "context_tokens":
			s.ContextTokens = n
		case "ring_keep_seconds":
			s.RingKeepSeconds = n
		default:
			s.APIPort = n
		}
	case "expose":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return bad("give true or false")
		}
		s.Expose = b
	case "gpu":
		if v != "on" && v != "off" {
			return bad("give on or off")
		}
		s.GPU = v
	case "draft":
		switch v {
		case "auto", "":
			s.Draft = ""
		case config.DraftOff:
			s.Draft = config.DraftOff
		default:
			s.Draft = config.ExpandHome(v) // the agent checks it is a file
		}
	case "memory_budget":
		n, err := parseBytes(v)
		if err != nil {
			return bad(err.Error())
		}
		s.MemoryBudget = n
	default:
		return fmt.Errorf("unknown setting %q; keys: name, model, model_dir, context_tokens, memory_budget, ring_keep_seconds, expose, api_key, gpu, api_port, draft", k)
	}
	return nil
}

// parseBytes reads "1048576", "512MiB", "1.5GiB", "2GB", "0".
func parseBytes(v string) (int64, error) {
	units := []struct {
		suffix string
		mul    float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	num, mul := strings.TrimSpace(v), 1.0
	for _, u := range units {
		if strings.HasSuffix(num, u.suffix) {
			num, mul = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.mul
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 || f*mul > 1<<50 {
		return 0, fmt.Errorf("give a size such as 8GiB, 512MiB or a number of bytes")
	}
	return int64(f * mul), nil
}
