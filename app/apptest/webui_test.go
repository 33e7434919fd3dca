//go:build linux

package apptest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// webUIModel is the real, trained model the web UI chats with.
var webUIModel, _ = filepath.Abs("../../../shared/models/stories260K.gguf")

// TestWebUI drives the web UI of a real `homering headless` with Debian's
// chromium (frontend/tests/e2e.mjs, playwright-core): three devices in
// network namespaces, two of them paired with the head (and both named
// "study"). The script chats
// and sees the reply stream, then checks the device map, Models and
// Settings, and saves screenshots; this test checks its verdicts and the
// screenshot files. Screenshots stay in $HOMERING_UI_SHOTS when set.
func TestWebUI(t *testing.T) {
	needFrontend(t)
	e := NewEnv(t)
	// Two devices share a host name, as two computers named alike do; the
	// UI tells them apart.
	names := []string{"kitchen", "study", "study"}
	var nodes []*Node
	for i, name := range names {
		n := e.NewNode(t, fmt.Sprintf("%s%d", name, i)) // a namespace each
		n.MustCLI(t, "contribute", "on")
		setConfigName(t, n.Home, name)
		nodes = append(nodes, n)
	}
	head := nodes[0]
	// The model folder is the generated test models (build/gen-models.sh),
	// so Models lists several with fit labels; the chat runs stories260K.
	models, _ := filepath.Abs("../../testdata/models")
	settings, _ := json.Marshal(map[string]any{"model_dir": models, "model": webUIModel, "context_tokens": 256})
	if err := os.WriteFile(filepath.Join(head.Home, "settings.json"), settings, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		n.Start(t)
	}
	pairWorkers(t, head, nodes[1:]...)

	// The browser runs in the head's namespace: the API listens on its loopback.
	log := runUIScript(t, head, "e2e.mjs", 30, []string{"chat.png", "devices.png", "models.png", "settings.png"},
		"EXPECT_DEVICES="+strconv.Itoa(len(nodes)), "EXPECT_SAME_NAME=study")
	if !strings.Contains(log, "device map shows 3 devices") {
		t.Errorf("the device map check did not run")
	}

	// A worker's own page while the head's ring job holds it (issue 18
	// item 7): its sidebar names the head's chat and its layers.
	if _, st := chat(t, head, "-m", webUIModel, "-n", "8", "--devices", "all", "--rounds", "1", "Once upon a time"); st.Ring == nil {
		t.Fatalf("the chat with --devices all ran on no ring: %+v", st)
	}
	runUIScript(t, nodes[1], "serving.mjs", 3, []string{"serving.png"}, "EXPECT_HEAD=kitchen")
}

// needFrontend fails t unless build/setup.sh installed and built the web
// UI the scripts drive.
func needFrontend(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("../../frontend/node_modules/playwright-core"); err != nil {
		t.Fatal("frontend/node_modules is missing: run build/setup.sh (npm ci in frontend/)")
	}
	if _, err := os.Stat("../../frontend/dist/index.html"); err != nil {
		t.Fatal("frontend/dist is not built: run build/setup.sh (npm run build in frontend/)")
	}
}

// runUIScript runs frontend/tests/script with node in n's network
// namespace (where n's API listens on loopback) against n's web UI, with
// HOMERING_URL, HOMERING_TOKEN, OUT and env set, and checks what it saved in
// OUT: a result.json with no failed check and at least minChecks checks,
// and each of shots not nearly empty. OUT is $HOMERING_UI_SHOTS when set,
// so the screenshots stay. It returns the script's output.
func runUIScript(t *testing.T, n *Node, script string, minChecks int, shots []string, env ...string) string {
	t.Helper()
	info := n.Info(t)
	out := os.Getenv("HOMERING_UI_SHOTS")
	if out == "" {
		out = t.TempDir()
	} else if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs("../..")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", n.NS, "node", filepath.Join(root, "frontend/tests", script))
	cmd.Env = append(os.Environ(), "HOMERING_URL="+info.URL, "HOMERING_TOKEN="+info.Token, "OUT="+out, "HOME="+t.TempDir())
	cmd.Env = append(cmd.Env, env...)
	cmd.Dir = root
	log, err := cmd.CombinedOutput()
	t.Logf("%s:\n%s", script, log)
	if err != nil {
		t.Errorf("the web UI checks of %s failed: %v", script, err)
	}
	var res struct {
		Checks []struct {
			Name string `json:"name"`
			OK   bool   `json:"ok"`
		} `json:"checks"`
	}
	rb, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatalf("%s wrote no result: %v", script, err)
	}
	if err := json.Unmarshal(rb, &res); err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Checks {
		if !c.OK {
			t.Errorf("web UI check failed: %s", c.Name)
		}
	}
	if len(res.Checks) < minChecks {
		t.Errorf("only %d checks ran; %s stopped early", len(res.Checks), script)
	}
	for _, want := range shots {
		if st, err := os.Stat(filepath.Join(out, want)); err != nil || st.Size() < 5000 {
			t.Errorf("screenshot %s missing or nearly empty: %v", want, err)
		}
	}
	return string(log)
}

// setConfigName sets the device name in config.json (written by
// `contribute on`), so the map shows three different names.
func setConfigName(t *testing.T, home, name string) {
	t.Helper()
	p := filepath.Join(home, "config.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["name"] = name
	b, _ = json.Marshal(m)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestWebUIMarkdown: a reply's Markdown (tables, nested lists,
// strikethrough, highlighted code with a Copy button) renders, hostile HTML
// and javascript: links do not, and the page turns dark with the system's
// setting (frontend/tests/render.mjs; issue 18 item 8); a reasoning
// model's thinking shows folded above its answer (issue 20 item 3).
func TestWebUIMarkdown(t *testing.T) {
	needFrontend(t)
	e := NewEnv(t)
	n := e.NewNode(t, "den")
	n.Start(t)
	runUIScript(t, n, "render.mjs", 13, []string{"markdown.png", "dark.png", "thinking.png"})
}
