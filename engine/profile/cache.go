package profile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"homering/engine/gguf"
	"homering/engine/profile/envelope"
	"homering/engine/profile/sysinfo"
)

// ErrCacheEntry is wrapped by every reason a cached profile is not used.
var ErrCacheEntry = errors.New("profile: cached profile is unusable")

// DefaultMaxAge is how old a cached profile may be before Get refreshes it
// in the background: hardware does not change, but a new driver, thermal
// paste or a BIOS setting does change the rates.
const DefaultMaxAge = 7 * 24 * time.Hour

// Cache keeps measured profiles in Dir (app/config's per-OS directory plus
// "profiles"), one file per key (hardware fingerprint + what was measured).
// A file holds the profile and the SHA-256 of its compact JSON (an
// engine/profile/envelope with the field "profile"); anything that
// does not parse, fails the hash, names another key or version, or holds a
// non-positive rate is measured again and overwritten: never trusted.
type Cache struct {
	Dir    string
	MaxAge time.Duration // 0: DefaultMaxAge
	Log    *slog.Logger  // non-nil
	// measure is Measure; tests replace it to count calls.
	measure func(context.Context, Options, *slog.Logger) (Profile, error)
	now     func() time.Time

	mu         sync.Mutex
	refreshing map[string]bool // keys being re-measured in the background
	wg         sync.WaitGroup
}

// NewCache returns a cache in dir.
func NewCache(dir string, log *slog.Logger) *Cache {
	return &Cache{Dir: dir, Log: log, measure: Measure, now: time.Now, refreshing: map[string]bool{}}
}

// envelopeField names the profile in a cache file (engine/profile/envelope):
// files written by earlier versions hold it there.
const envelopeField = "profile"

// Get returns this device's profile for o: the cached one when it is valid
// (refreshed in the background when older than MaxAge, never blocking the
// caller), else a new measurement, which is cached. Memory is read fresh
// either way. fresh reports whether it was measured by this call.
func (c *Cache) Get(ctx context.Context, o Options) (p Profile, fresh bool, err error) {
	k, err := c.keyFor(o)
	if err != nil {
		return Profile{}, false, err
	}
	p, err = c.load(k)
	if err == nil {
		mem, merr := sysinfo.ReadMemory()
		if merr == nil {
			p.Memory = mem
		}
		if c.now().Sub(p.MeasuredAt) > c.maxAge() {
			c.refresh(ctx, k, o)
		}
		return p, false, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		c.Log.Warn("profile: measuring again", "key", k, "err", err)
	}
	p, err = c.measure(ctx, o, c.Log)
	if err != nil {
		return Profile{}, false, err
	}
	if err := c.store(p); err != nil {
		c.Log.Warn("profile: could not cache the profile", "err", err)
	}
	return p, true, nil
}

// Wait waits for background refreshes started by Get.
func (c *Cache) Wait() { c.wg.Wait() }

func (c *Cache) maxAge() time.Duration {
	if c.MaxAge > 0 {
		return c.MaxAge
	}
	return DefaultMaxAge
}

// refresh re-measures key in a goroutine unless one is running.
func (c *Cache) refresh(ctx context.Context, k string, o Options) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refreshing[k] {
		return
	}
	c.refreshing[k] = true
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() {
			c.mu.Lock()
			delete(c.refreshing, k)
			c.mu.Unlock()
		}()
		p, err := c.measure(ctx, o, c.Log)
		if err == nil {
			err = c.store(p)
		}
		if err != nil {
			c.Log.Warn("profile: background refresh failed", "key", k, "err", err)
		}
	}()
}

// keyFor is the key Measure would give: it needs the shapes and the
// fingerprint, both cheap.
func (c *Cache) keyFor(o Options) (string, error) {
	o = o.withDefaults()
	layer, output := defaultLayer, (*Shape)(nil)
	var types []gguf.Type
	if o.Model != "" {
		var err error
		if layer, output, err = LayerShapes(o.Model); err != nil {
			return "", err
		}
		if types, err = WeightTypes(o.Model); err != nil {
			return "", err
		}
	}
	mem, err := sysinfo.ReadMemory()
	if err != nil {
		return "", err
	}
	return key(fingerprint(mem), o.Threads, layer, output, types, gpus()), nil
}

func (c *Cache) path(k string) string { return filepath.Join(c.Dir, k+".json") }

func (c *Cache) load(k string) (Profile, error) {
	b, err := os.ReadFile(c.path(k))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Profile{}, err
		}
		return Profile{}, fmt.Errorf("%w: %w", ErrCacheEntry, err)
	}
	payload, err := envelope.Open(b, envelopeField)
	if err != nil {
		return Profile{}, fmt.Errorf("%w: %s: %w", ErrCacheEntry, c.path(k), err)
	}
	var p Profile
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Profile{}, fmt.Errorf("%w: %s: %w", ErrCacheEntry, c.path(k), err)
	}
	if p.Key != k {
		return Profile{}, fmt.Errorf("%w: %s holds key %q", ErrCacheEntry, c.path(k), p.Key)
	}
	if err := p.validate(); err != nil {
		return Profile{}, fmt.Errorf("%w: %s: %w", ErrCacheEntry, c.path(k), err)
	}
	return p, nil
}

// CacheDirName is the directory under app/config's directory that holds the
// cached profiles (Cache.Dir is config dir + CacheDirName).
const CacheDirName = "profiles"

// LoadCached reads this device's cached profile from configDir (app/config's
// directory) without measuring anything: for the agent's device map and the
// ring planner, which must not stall on a measurement. Of the entries whose
// key names this machine's fingerprint and that pass every check of Get
// (parse, checksum, key, version, positive rates), it returns the one
// measured last, with Memory read fresh. ok is false when there is none:
// no entry yet, or only corrupt or unreadable ones, which are never trusted
// (the runner's next Get measures them again). err reports only what stops
// the look-up itself: an unreadable directory or memory counters.
func LoadCached(configDir string) (p Profile, ok bool, err error) {
	return NewCache(filepath.Join(configDir, CacheDirName), slog.New(slog.DiscardHandler)).Latest()
}

// Latest is LoadCached for this cache's directory.
func (c *Cache) Latest() (p Profile, ok bool, err error) {
	all, err := c.Entries()
	for _, q := range all {
		if !ok || q.MeasuredAt.After(p.MeasuredAt) {
			p, ok = q, true
		}
	}
	return p, ok, err
}

// Entries lists this machine's cached profiles that pass every check of Get
// (any model, any thread count), with Memory read fresh; corrupt and
// unreadable entries are left out. err reports only what stops the
// look-up itself.
func (c *Cache) Entries() ([]Profile, error) {
	mem, err := sysinfo.ReadMemory()
	if err != nil {
		return nil, err
	}
	prefix := fingerprint(mem) + "-"
	names, err := os.ReadDir(c.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("profile: read the profile cache: %w", err)
	}
	var out []Profile
	for _, e := range names {
		k, isJSON := strings.CutSuffix(e.Name(), ".json")
		if !isJSON || !strings.HasPrefix(k, prefix) {
			continue
		}
		q, lerr := c.load(k)
		if lerr != nil {
			c.Log.Debug("profile: cached entry not used", "err", lerr)
			continue
		}
		q.Memory = mem
		out = append(out, q)
	}
	return out, nil
}

// Store caches p under its key (after a measurement made outside Get).
func (c *Cache) Store(p Profile) error { return c.store(p) }

// store writes atomically (temp file + rename): a crash mid-write leaves the
// old entry or none, and a torn file would fail its checksum anyway.
func (c *Cache) store(p Profile) error {
	b, err := envelope.Seal(envelopeField, p)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return fmt.Errorf("profile: cache dir: %w", err)
	}
	f, err := os.CreateTemp(c.Dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("profile: cache: %w", err)
	}
	if _, err = f.Write(b); err == nil {
		err = f.Close()
	} else {
		_ = f.Close() // the write's error is the one to report
	}
	if err == nil {
		err = os.Rename(f.Name(), c.path(p.Key))
	}
	if err != nil {
		_ = os.Remove(f.Name()) // best effort: a stray .tmp- file is never read
		return fmt.Errorf("profile: cache: %w", err)
	}
	return nil
}
