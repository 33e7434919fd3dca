package ringtest

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Cmd is one command of a script: a name and its arguments.
type Cmd struct {
	Pos  string // file:line, for failures
	Name string
	Args []string
}

// Arg returns the value of key=value, and whether it was present.
func (c Cmd) Arg(key string) (string, bool) {
	for _, a := range c.Args {
		if k, v, ok := strings.Cut(a, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// block is a command with its expected output, or a run of comment and
// blank lines kept verbatim for -rewrite.
type block struct {
	verbatim string
	cmd      Cmd
	line     string // the command line as written
	want     string
}

// parse reads the datadriven format of etcd-io/raft's testdata:
//
//	# comment
//	command arg key=value
//	----
//	expected output, up to a blank line
func parse(path, text string) ([]block, error) {
	lines := strings.Split(text, "\n")
	var out []block
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			out = append(out, block{verbatim: l})
			continue
		}
		f := strings.Fields(l)
		b := block{cmd: Cmd{Pos: fmt.Sprintf("%s:%d", path, i+1), Name: f[0], Args: f[1:]}, line: l}
		if i+1 >= len(lines) || lines[i+1] != "----" {
			return nil, fmt.Errorf("%s:%d: command %q is not followed by ----", path, i+1, l)
		}
		i += 2
		var want []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			want = append(want, lines[i])
		}
		b.want = strings.Join(want, "\n")
		out = append(out, b)
		if i < len(lines) {
			out = append(out, block{verbatim: ""})
		}
	}
	return out, nil
}

// RunFile runs every command of the script at path through run and compares
// its output with the expected one; with rewrite it writes the actual
// outputs back into the file instead, to be reviewed as a diff.
func RunFile(t *testing.T, path string, rewrite bool, run func(Cmd) string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parse(path, strings.TrimRight(string(data), "\n"))
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for i, b := range blocks {
		if b.cmd.Name == "" {
			sb.WriteString(b.verbatim)
		} else {
			got := strings.TrimRight(run(b.cmd), "\n")
			if strings.Contains(got, "\n\n") {
				t.Fatalf("%s: output has a blank line, which the format cannot hold:\n%s", b.cmd.Pos, got)
			}
			if !rewrite && got != b.want {
				t.Errorf("%s: %s\nwant:\n%s\ngot:\n%s", b.cmd.Pos, b.line, b.want, got)
			}
			sb.WriteString(b.line + "\n----\n" + got)
		}
		if i < len(blocks)-1 {
			sb.WriteString("\n")
		}
	}
	if rewrite {
		if err := os.WriteFile(path, []byte(sb.String()+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
