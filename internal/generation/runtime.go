package generation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/query"
)

// Config sets up a Runtime.
type Config struct {
	Mounts []catalog.DatasetMount
	// Positional says the single mount is the default Dataset "dataset".
	Positional bool
	Options    catalog.Options
	Limits     engine.Limits
	// Gate bounds the DuckDB instances of every generation together.
	Gate   *engine.Gate
	Parser *query.Parser
	Logger *slog.Logger
	// Supervise keeps the Storyline projections of the local canonical
	// events stores of the mounted Datasets up to date (supervisor.go):
	// the server's one write, to the deterministic sibling projection.
	Supervise bool
	// SuperviseEvery is how often the supervisor looks (default 2s), and
	// IdleFor how long a store's revision must stay the same before its
	// projection is rebuilt (default two ticks).
	SuperviseEvery time.Duration
	IdleFor        time.Duration
	// RetryLimit bounds the retries of a failed refresh (default 3), each
	// after RetryBackoff doubled (default 1s).
	RetryLimit   int
	RetryBackoff time.Duration
}

// Refresh triggers, for reports and logs.
const (
	TriggerStartup    = "startup"
	TriggerAPI        = "api"
	TriggerPoll       = "poll"
	TriggerProjection = "projection"
	TriggerRetry      = "retry"
)

// Report describes one refresh.
type Report struct {
	Trigger   string        `json:"trigger"`
	StartedAt time.Time     `json:"started_at"`
	Duration  time.Duration `json:"duration_ns"`
	// Outcome is "published" (a new generation serves), "unchanged" (the
	// member set and versions were the same; nothing was swapped) or
	// "failed" (the previous generation keeps serving).
	Outcome    string `json:"outcome"`
	Error      string `json:"error,omitempty"`
	SnapshotID string `json:"snapshot_id"`
	Previous   string `json:"previous_snapshot_id,omitempty"`
	// Reused counts the sources whose resolution carried over.
	Reused int `json:"reused_sources"`
}

// Runtime publishes one Generation at a time (see the package comment).
type Runtime struct {
	cfg Config
	log *slog.Logger
	cur atomic.Pointer[Generation]
	seq atomic.Int64

	builds singleflight.Group

	mu      sync.Mutex
	dirty   bool
	last    *Report
	retries int
	closed  bool

	stop chan struct{}
	bg   sync.WaitGroup

	super *supervisor
}

// ErrClosed is returned by a Runtime that was closed.
var ErrClosed = errors.New("the server is shutting down")

// Start builds and publishes the first generation: it converges the
// projections first when supervising, so the first Snapshot already selects
// them.
func Start(ctx context.Context, cfg Config) (*Runtime, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SuperviseEvery <= 0 {
		cfg.SuperviseEvery = 2 * time.Second
	}
	if cfg.IdleFor <= 0 {
		cfg.IdleFor = 2 * cfg.SuperviseEvery
	}
	if cfg.RetryLimit <= 0 {
		cfg.RetryLimit = 3
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = time.Second
	}
	r := &Runtime{cfg: cfg, log: cfg.Logger, stop: make(chan struct{})}
	if cfg.Supervise {
		r.super = newSupervisor(r)
		if err := r.super.converge(ctx); err != nil {
			return nil, err
		}
	}
	rep, err := r.refresh(ctx, TriggerStartup, true)
	if err != nil {
		return nil, err
	}
	r.log.Info("snapshot published", "snapshot_id", rep.SnapshotID, "took", rep.Duration)
	if r.super != nil {
		r.bg.Add(1)
		go r.super.run()
	}
	return r, nil
}

// Acquire returns the current generation and the function that releases
// it; a request calls release when its response is written. Every read of
// one request uses the generation it acquired.
func (r *Runtime) Acquire() (*Generation, func(), error) {
	for {
		g := r.cur.Load()
		if g == nil {
			return nil, nil, ErrClosed
		}
		if g.tryAcquire() {
			var once sync.Once
			return g, func() { once.Do(g.release) }, nil
		}
		// It was retired and closed between the load and the acquire: the
		// next load sees its successor.
	}
}

// Refresh builds a complete new generation off the lock and publishes it;
// concurrent calls share one build. With force unset, a build whose
// snapshot id equals the current one is discarded (nothing changed). A
// failure keeps the current generation serving, marks the runtime dirty
// and schedules bounded retries.
func (r *Runtime) Refresh(ctx context.Context, trigger string, force bool) (*Report, error) {
	return r.refresh(ctx, trigger, force)
}

func (r *Runtime) refresh(ctx context.Context, trigger string, force bool) (*Report, error) {
	key := "refresh"
	if force {
		key = "force"
	}
	ch := r.builds.DoChan(key, func() (any, error) {
		// Detached: one caller's cancellation must not fail the others'.
		return r.buildAndPublish(context.WithoutCancel(ctx), trigger, force)
	})
	select {
	case res := <-ch:
		rep, _ := res.Val.(*Report)
		return rep, res.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (r *Runtime) buildAndPublish(ctx context.Context, trigger string, force bool) (*Report, error) {
	rep := &Report{Trigger: trigger, StartedAt: time.Now().UTC()}
	prev := r.cur.Load()
	var opts []catalog.BuildOption
	if prev != nil && prev.tryAcquire() {
		defer prev.release()
		rep.Previous = prev.ID()
		opts = append(opts, catalog.Reusing(prev.snap))
	} else {
		prev = nil
	}
	snap, err := catalog.Build(ctx, r.cfg.Mounts, r.cfg.Options, opts...)
	rep.Duration = time.Since(rep.StartedAt)
	if err != nil {
		rep.Outcome, rep.Error = "failed", catalog.RedactURI(err.Error())
		if prev != nil {
			rep.SnapshotID = prev.ID()
		}
		r.failed(rep)
		return rep, err
	}
	rep.SnapshotID, rep.Reused = snap.ID, snap.Reused()
	if !force && prev != nil && snap.ID == prev.ID() {
		snap.Close()
		rep.Outcome = "unchanged"
		r.record(rep, false)
		return rep, nil
	}
	g := build(snap, r.cfg.Parser, engine.Config{Positional: r.cfg.Positional, Limits: r.cfg.Limits, Gate: r.cfg.Gate}, r.seq.Add(1))
	// Complete before it is published: the queries its predecessor was
	// answering are planned (their sources resolved) with an instance set
	// up for the latest, and its first query's instance is open.
	if prev != nil {
		g.engine.Warm(ctx, prev.engine.Recent())
	}
	g.engine.WaitPrepared(ctx)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		g.release()
		return nil, ErrClosed
	}
	old := r.cur.Swap(g)
	r.mu.Unlock()
	if old != nil {
		old.release() // the Runtime's reference: in-flight requests keep theirs
	}
	rep.Outcome = "published"
	rep.Duration = time.Since(rep.StartedAt)
	r.record(rep, true)
	if rep.Previous != "" {
		r.log.Info("snapshot published", "trigger", trigger, "snapshot_id", rep.SnapshotID, "previous", rep.Previous,
			"reused_sources", rep.Reused, "took", rep.Duration)
	}
	return rep, nil
}

// record keeps the outcome; a success clears the dirty flag.
func (r *Runtime) record(rep *Report, clean bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = rep
	if clean || rep.Outcome == "unchanged" {
		r.dirty, r.retries = false, 0
	}
}

// failed keeps the old generation, marks the runtime dirty and schedules a
// retry while the bound allows.
func (r *Runtime) failed(rep *Report) {
	r.mu.Lock()
	r.last = rep
	r.dirty = true
	retry := !r.closed && r.retries < r.cfg.RetryLimit && r.cur.Load() != nil
	wait := r.cfg.RetryBackoff << r.retries
	if retry {
		r.retries++
		r.bg.Add(1)
	}
	r.mu.Unlock()
	r.log.Warn("snapshot refresh failed; the previous snapshot keeps serving", "trigger", rep.Trigger, "error", rep.Error, "retry", retry)
	if retry {
		go func() {
			defer r.bg.Done()
			select {
			case <-time.After(wait):
				r.refresh(context.Background(), TriggerRetry, true)
			case <-r.stop:
			}
		}()
	}
}

// MarkDirty records that the member set changed (a new store appeared, a
// projection was published) and refreshes in the background.
func (r *Runtime) MarkDirty(trigger string) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.dirty = true
	r.bg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.bg.Done()
		r.refresh(context.Background(), trigger, true)
	}()
}

// Poll refreshes every interval until Close, publishing only when the
// member set or a pinned version changed.
func (r *Runtime) Poll(every time.Duration) {
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				if _, err := r.refresh(context.Background(), TriggerPoll, false); err != nil && !errors.Is(err, ErrClosed) {
					r.log.Debug("poll refresh failed", "error", err)
				}
			}
		}
	}()
}

// Status is what the catalog route reports about the runtime.
type Status struct {
	Generation  int64   `json:"generation"`
	Dirty       bool    `json:"dirty"`
	LastRefresh *Report `json:"last_refresh"`
	Retries     int     `json:"pending_retries"`
	// Projections is the supervisor's state (nil when not supervising).
	Projections []ProjectionState `json:"projections,omitempty"`
}

// Status reports the dirty flag and the last refresh.
func (r *Runtime) Status() Status {
	r.mu.Lock()
	st := Status{Dirty: r.dirty, Retries: r.retries}
	if r.last != nil {
		last := *r.last
		st.LastRefresh = &last
	}
	r.mu.Unlock()
	if g := r.cur.Load(); g != nil {
		st.Generation = g.number
	}
	if r.super != nil {
		st.Projections = r.super.states()
	}
	return st
}

// Close stops refreshing and supervising, and retires the current
// generation: it closes once the requests still holding it end.
func (r *Runtime) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	close(r.stop)
	r.mu.Unlock()
	r.bg.Wait()
	if g := r.cur.Swap(nil); g != nil {
		g.release()
	}
}

func (r *Runtime) String() string { return fmt.Sprintf("runtime over %d Datasets", len(r.cfg.Mounts)) }
