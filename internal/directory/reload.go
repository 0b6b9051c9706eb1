package directory

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ReloadInterval is how often a serving Directory looks for config changes.
const ReloadInterval = 3 * time.Second

// ErrRestartRequired: a config edit changed Dataset definitions or backend
// keys, which only take effect when serve restarts.
var ErrRestartRequired = errors.New("dataset definitions changed; restart serve to apply them")

// Watcher holds the ACL of a serving Directory and reloads users and grants
// when the file changes. A new config is parsed and validated completely
// before it replaces the old ACL; any failure keeps the last valid one.
type Watcher struct {
	path     string
	log      *slog.Logger
	datasets map[string]Dataset // as at start: changing them needs a restart
	acl      atomic.Pointer[ACL]

	mu   sync.Mutex // serializes reloads
	seen [sha256.Size]byte
}

// Watch loads the config at path (a missing or invalid file is an error: serve
// must not start without a valid ACL) and returns its Watcher. Reload or Run
// pick up later edits.
func Watch(path string, log *slog.Logger) (*Watcher, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	c, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	w := &Watcher{path: path, log: log, datasets: c.Datasets, seen: sha256.Sum256(data)}
	w.acl.Store(NewACL(c))
	return w, nil
}

// ACL returns the current ACL; callers use one ACL for a whole request.
func (w *Watcher) ACL() *ACL { return w.acl.Load() }

// Run reloads every interval until ctx is done.
func (w *Watcher) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.Reload()
		}
	}
}

// Reload reads the file once. Unchanged content is a no-op; a valid change
// to users and grants replaces the ACL; an unreadable, invalid or
// Dataset-changing edit keeps the current ACL and is logged once (the
// messages name tables and keys, never values). The error says why an edit
// was not applied.
func (w *Watcher) Reload() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	keep := w.acl.Load().Revision()
	data, err := readBounded(w.path)
	if err != nil {
		// The same failure is logged again only after the file was readable.
		if w.seen != ([sha256.Size]byte{}) {
			w.log.Warn("catalog config not reloaded; keeping the last valid ACL", "path", w.path, "revision", keep, "error", err.Error())
		}
		w.seen = [sha256.Size]byte{}
		return err
	}
	sum := sha256.Sum256(data)
	if sum == w.seen {
		return nil
	}
	w.seen = sum
	c, err := Parse(w.path, data)
	if err == nil {
		if changed := datasetChanges(w.datasets, c.Datasets); len(changed) > 0 {
			err = fmt.Errorf("%s: %w (%s)", w.path, ErrRestartRequired, strings.Join(changed, "; "))
		}
	}
	if err != nil {
		w.log.Warn("catalog config not reloaded; keeping the last valid ACL", "path", w.path, "revision", keep, "error", err.Error())
		return err
	}
	w.acl.Store(NewACL(c))
	w.log.Info("catalog config reloaded", "path", w.path, "revision", c.Meta.Revision, "users", len(c.Users), "grants", len(c.Grants))
	return nil
}

// datasetChanges describes how next differs from prev by Dataset name and
// field name only.
func datasetChanges(prev, next map[string]Dataset) []string {
	var out []string
	for _, name := range sortedKeys(prev) {
		n, ok := next[name]
		if !ok {
			out = append(out, name+" removed")
			continue
		}
		p := prev[name]
		var fields []string
		for _, f := range []struct {
			name string
			same bool
		}{
			{"uri", p.URI == n.URI}, {"endpoint", p.Endpoint == n.Endpoint}, {"region", p.Region == n.Region},
			{"access_key", p.AccessKey == n.AccessKey}, {"secret_key", p.SecretKey == n.SecretKey},
		} {
			if !f.same {
				fields = append(fields, f.name)
			}
		}
		if len(fields) > 0 {
			out = append(out, name+" changed ("+strings.Join(fields, ", ")+")")
		}
	}
	for _, name := range sortedKeys(next) {
		if _, ok := prev[name]; !ok {
			out = append(out, name+" added")
		}
	}
	return out
}
