//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"homering/app/api/apitype"
)

// waitPeers polls COMMAND (homering peers -json on the head) until at least
// n peers are paired, visible and contributing.
func waitPeers(args []string) error {
	fs := flag.NewFlagSet("wait-peers", flag.ContinueOnError)
	n := fs.Int("n", 2, "peers needed")
	atMost := fs.Bool("at-most", false, "wait until at most n peers are paired, visible and contributing (some turned contribute off)")
	timeout := fs.Duration("timeout", 60*time.Second, "give up after")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("need a COMMAND printing homering peers -json")
	}
	deadline := time.Now().Add(*timeout)
	var last string
	for {
		out, err := exec.Command(fs.Arg(0), fs.Args()[1:]...).Output()
		if err == nil {
			var ps apitype.Peers
			if err := json.Unmarshal(out, &ps); err == nil {
				ok := 0
				var seen []string
				for _, p := range ps.Peers {
					if p.Paired && p.Visible && p.Contribute {
						ok++
					}
					seen = append(seen, fmt.Sprintf("%s paired=%v visible=%v contribute=%v", p.Short, p.Paired, p.Visible, p.Contribute))
				}
				if ok >= *n && !*atMost || ok <= *n && *atMost {
					return nil
				}
				last = strings.Join(seen, "; ")
			} else {
				last = err.Error()
			}
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("fewer than %d peers paired, visible and contributing after %s: %s", *n, *timeout, last)
		}
		time.Sleep(250 * time.Millisecond) // poll interval
	}
}

// snapshot writes each cgroup's non-reclaimable bytes now, as the baseline
// measure -base subtracts (the idle agents of the ring cases).
func snapshot(args []string) error {
	fs := flag.NewFlagSet("snapshot", flag.ContinueOnError)
	cgs := fs.String("cgroups", "", "NAME=DIR,...")
	if err := fs.Parse(args); err != nil {
		return err
	}
	devs, err := openCgroups(*cgs)
	if err != nil {
		return err
	}
	base := map[string]int64{}
	for _, d := range devs {
		_, nr, _, err := d.now()
		if err != nil {
			return err
		}
		base[d.name] = nr
	}
	return json.NewEncoder(os.Stdout).Encode(base)
}
