package catalog

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

// FileRequest asks for some Storyline relations of a file source.
type FileRequest struct {
	Source    *Source
	Relations []string
}

// ResolveFiles resolves many local peripheral file sources at once: they are
// normalized in parallel (max_concurrent_sources workers) into shared
// scratch Parquet files, one per relation (and per set of requested
// relations), because creating files, not normalizing them, dominates when
// a query first touches thousands of small sources. Each source is
// normalized once for every relation it asks for that is not resolved yet,
// and only those relations are written. Each relation cell then holds the
// shared file with Owners naming every source whose rows it contains, so
// readers of a subset filter by _file_. Relations already resolved (and
// sources that are not local files) are left alone; errors are cached per
// source and relation like Resolve's. Relations the normalization cache
// holds are served from it, and the batch is kept there (normcache.go).
func (snap *Snapshot) ResolveFiles(ctx context.Context, reqs []FileRequest) error {
	snap.batchMu.Lock()
	defer snap.batchMu.Unlock()
	// Claim the unresolved cells; holding their locks makes concurrent
	// Resolve calls for them wait for this batch (single flight).
	var claimed []cacheClaim // the relations to normalize, after the cache
	var held [][]int         // the cells each claim holds
	defer func() {
		for i, c := range claimed {
			c.s.relations.unlock(held[i])
		}
	}()
	groups := map[string][]int{} // requested relations → claimed sources
	var keys []string
	for _, r := range reqs {
		s := r.Source
		if _, ok := s.Revision.(*FileRevision); !ok || s.Err != nil {
			continue
		}
		h, missing := s.relations.lock(r.Relations)
		if len(missing) == 0 {
			s.relations.unlock(h)
			continue
		}
		claimed, held = append(claimed, cacheClaim{s: s, missing: missing}), append(held, h)
	}
	snap.fromCache(claimed) // normcache.go
	var todo []int          // claimed sources with relations the cache does not hold
	for i := range claimed {
		c := &claimed[i]
		if len(c.missing) == 0 {
			continue
		}
		key := strings.Join(c.missing, ",")
		if groups[key] == nil {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], i)
		todo = append(todo, i)
	}
	if len(todo) == 0 {
		return nil
	}
	// One scratch set per group of sources that ask for the same relations.
	type batch struct {
		mu  sync.Mutex
		w   *storyline.Scratch
		dir string
	}
	batches := map[string]*batch{}
	of := make([]*batch, len(claimed))
	for _, key := range keys {
		dir, err := os.MkdirTemp(snap.TempDir, "batch-")
		if err != nil {
			return err
		}
		w, err := storyline.NewScratch(dir, strings.Split(key, ",")...)
		if err != nil {
			return err
		}
		b := &batch{w: w, dir: dir}
		batches[key] = b
		for _, i := range groups[key] {
			of[i] = b
		}
	}
	errs := make([]error, len(claimed))
	formats := make([]string, len(claimed))
	work := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for n := 0; n < min(snap.Options.MaxConcurrentSources, len(todo)); n++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				s, b := claimed[i].s, of[i]
				add := func(sl *model.Storyline) error {
					b.mu.Lock()
					defer b.mu.Unlock()
					return b.w.Add(sl)
				}
				snap.resolves.Add(1)
				formats[i], errs[i] = s.normalizeInto(ctx, s.Path, s.checkPin(*s.Revision.(*FileRevision)), add)
			}
		}()
	}
	for _, i := range todo {
		work <- i
	}
	close(work)
	wg.Wait()
	if ctx.Err() != nil { // not cached: a later query retries
		for _, b := range batches {
			b.w.Abort()
		}
		return ctx.Err()
	}
	var failed []error
	for _, key := range keys {
		b := batches[key]
		closeErr := b.w.Close()
		files := scratchFiles(b.w)
		// Every source of the group may have rows in the files, even one
		// that failed half way (its queries fail on its cached error).
		idx := groups[key]
		owners := make([]string, len(idx))
		for j, i := range idx {
			owners[j] = claimed[i].s.File
		}
		for _, i := range idx {
			s := claimed[i].s
			var nt *notTrajectory
			for _, rel := range claimed[i].missing {
				c := &s.relations[relIndex(rel)]
				c.done = true
				switch {
				case errors.As(errs[i], &nt):
					c.res = nt.resolved()
				case errs[i] != nil:
					c.err = errs[i]
				case closeErr != nil:
					c.err = closeErr
				default:
					c.res = &Resolved{Files: map[string][]string{rel: files[rel]}, Dirs: []string{b.dir}, Format: formats[i], Owners: owners}
				}
			}
			switch {
			case errs[i] != nil && !errors.As(errs[i], &nt):
				failed = append(failed, errs[i])
			case errs[i] == nil:
				s.setFormat(formats[i])
			}
		}
		if closeErr != nil {
			failed = append(failed, closeErr)
			continue
		}
		var members []cacheMember
		for _, i := range idx {
			c := claimed[i]
			members = append(members, cacheMember{c.s, c.keys, c.cacheable, errs[i], formats[i]})
		}
		snap.storeBatch(ctx, members, strings.Split(key, ","), files, owners, start)
	}
	if len(failed) > 0 {
		return failed[0]
	}
	return nil
}
