package catalog

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

// ResolveFiles resolves many local peripheral file sources at once: they are
// normalized in parallel (max_concurrent_sources workers) into ONE shared
// set of scratch Parquet files, because creating files, not normalizing
// them, dominates when a query first touches thousands of small sources.
// Each source's cell then holds the shared files with Owners naming every
// source whose rows they contain, so readers of a subset filter by _file_.
// Sources already resolved (or not local files) are left alone; errors are
// cached per source like Resolve's. Sources the normalization cache holds
// are served from it, and the batch is kept there (normcache.go).
func (snap *Snapshot) ResolveFiles(ctx context.Context, srcs []*Source) error {
	snap.batchMu.Lock()
	defer snap.batchMu.Unlock()
	// Claim the unresolved cells; holding their locks makes concurrent
	// Resolve calls for them wait for this batch (single flight).
	var claimed []*Source
	for _, s := range srcs {
		if _, ok := s.Revision.(*FileRevision); !ok || s.Err != nil {
			continue
		}
		s.storylines.mu.Lock()
		if s.storylines.done {
			s.storylines.mu.Unlock()
			continue
		}
		claimed = append(claimed, s)
	}
	if len(claimed) == 0 {
		return nil
	}
	defer func() {
		for _, s := range claimed {
			s.storylines.mu.Unlock()
		}
	}()
	todo, keys, cacheable := snap.fromCache(claimed) // normcache.go
	if len(todo) == 0 {
		return nil
	}
	dir, err := os.MkdirTemp(snap.TempDir, "batch-")
	if err != nil {
		return err
	}
	w, err := storyline.NewScratch(dir)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	add := func(sl *model.Storyline) error {
		mu.Lock()
		defer mu.Unlock()
		return w.Add(sl)
	}
	errs := make([]error, len(todo))
	formats := make([]string, len(todo))
	start := time.Now()
	work := make(chan int)
	var wg sync.WaitGroup
	for n := 0; n < min(snap.Options.MaxConcurrentSources, len(todo)); n++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				s := todo[i]
				snap.resolves.Add(1)
				formats[i], errs[i] = s.normalizeInto(ctx, s.Path, s.checkPin(*s.Revision.(*FileRevision)), add)
			}
		}()
	}
	for i := range todo {
		work <- i
	}
	close(work)
	wg.Wait()
	if ctx.Err() != nil { // not cached: a later query retries
		w.Abort()
		return ctx.Err()
	}
	closeErr := w.Close()
	files := map[string][]string{}
	for _, rel := range storyline.Tables {
		files[rel] = []string{w.Path(rel)}
	}
	// Every claimed source may have rows in the files, even one that
	// failed half way (its queries fail on its cached error).
	owners := make([]string, len(todo))
	for i, s := range todo {
		owners[i] = s.File
	}
	var failed []error
	for i, s := range todo {
		c := &s.storylines
		c.done = true
		var nt *notTrajectory
		switch {
		case errors.As(errs[i], &nt):
			c.res = nt.resolved()
		case errs[i] != nil:
			c.err = errs[i]
			failed = append(failed, errs[i])
		case closeErr != nil:
			c.err = closeErr
		default:
			s.format = formats[i]
			c.res = &Resolved{Files: files, Dirs: []string{dir}, Format: formats[i], Owners: owners}
		}
	}
	if closeErr == nil {
		snap.storeBatch(ctx, todo, keys, cacheable, errs, formats, files, owners, start)
	}
	if len(failed) > 0 {
		return failed[0]
	}
	return closeErr
}
