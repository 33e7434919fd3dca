package profile

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Due says why this device should be measured (again) before it plans a
// model of the given weight types with threads threads, or "" when one of
// entries (the valid cached profiles, Cache.Entries) serves: measured with
// that thread count, at most maxAge before now, and rating every type. The
// agent's background measurement asks it; a chat never waits for the
// answer.
func Due(entries []Profile, now time.Time, maxAge time.Duration, threads int, types []string) string {
	if len(entries) == 0 {
		return "this device has not been measured yet"
	}
	var fresh, atThreads bool
	var missing []string
	var newest time.Time
	for _, p := range entries {
		if p.Threads != threads {
			continue
		}
		atThreads = true
		if p.MeasuredAt.After(newest) {
			newest = p.MeasuredAt
		}
		if now.Sub(p.MeasuredAt) > maxAge {
			continue
		}
		var lacks []string
		for _, t := range types {
			if !(p.CPUFlops[t] > 0) {
				lacks = append(lacks, t)
			}
		}
		if len(lacks) == 0 {
			return ""
		}
		if !fresh || len(lacks) < len(missing) {
			missing = lacks
		}
		fresh = true
	}
	switch {
	case !atThreads:
		return fmt.Sprintf("this device has not been measured with %d thread(s)", threads)
	case fresh:
		return "the last measurement lacks " + strings.Join(missing, ", ")
	}
	return fmt.Sprintf("the last measurement is %d days old", int(now.Sub(newest).Hours()/24))
}

// ModelTypes lists the weight types (halda's keys: ggml names in lower
// case) of the matrices the model's layers (every layer: a mixed file's
// differ) and output use: what a profile must rate to plan it.
func ModelTypes(path string) ([]string, error) {
	types, err := WeightTypes(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range types {
		if k := typeKey(t); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out, nil
}
