package catalog

import (
	"context"
	"errors"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pchronicle/pchronicle/internal/hugeheap"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

// ResolveCached resolves the requested relations that the normalization
// cache holds verified entries for, and leaves the rest unresolved. It is
// what can be done for a query before its SQL is analyzed: verifying the
// cached files is most of a warm query's plan, and a relation resolved
// that the query then does not read costs only that verification.
func (snap *Snapshot) ResolveCached(reqs []FileRequest) {
	if snap.cache == nil {
		return
	}
	snap.batchMu.Lock()
	defer snap.batchMu.Unlock()
	claimed, unlock := claim(reqs)
	defer unlock()
	snap.fromCache(claimed)
}

// claim takes the locks of the unresolved cells of local file sources the
// requests ask for; holding them makes concurrent Resolve calls for them
// wait (single flight). unlock releases them.
func claim(reqs []FileRequest) (claimed []cacheClaim, unlock func()) {
	claimed = make([]cacheClaim, 0, len(reqs))
	held := make([][]int, 0, len(reqs)) // the cells each claim holds
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
	return claimed, func() {
		for i, c := range claimed {
			c.s.relations.unlock(held[i])
		}
	}
}

// FileRequest asks for some Storyline relations of a file source.
type FileRequest struct {
	Source    *Source
	Relations []string // relations, or their lean parts (LeanPart)
}

// largeFileBytes is the mean size from which a batch's files are large
// (see batchWorkers).
const largeFileBytes = 1 << 20

// batchWorkers is how many of a batch's files (never none), bytes in all,
// normalize at once: up to most, but no more than one per CPU when the
// files are large. A large file costs CPU, not waiting, so a worker beyond
// one per CPU only holds another file's Storylines and scratch row groups
// at once; small files leave a CPU waiting on their opens and reads, which
// more workers fill (docs/performance.md, "Workers of a batch of large
// files").
func batchWorkers(most, files int, bytes int64) int {
	workers := min(most, files)
	if bytes/int64(files) >= largeFileBytes {
		workers = min(workers, runtime.GOMAXPROCS(0))
	}
	return workers
}

// ResolveFiles resolves many local peripheral file sources at once: they are
// normalized in parallel (max_concurrent_sources workers) into shared
// scratch Parquet files, one per relation, worker and set of requested
// relations, because creating files, not normalizing them, dominates when
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
	claimed, unlock := claim(reqs)
	defer unlock()
	var keys []string       // the distinct sets of requested relations, in order
	snap.fromCache(claimed) // normcache.go
	var todo []int          // claimed sources with relations the cache does not hold
	for i := range claimed {
		c := &claimed[i]
		if len(c.missing) == 0 {
			continue
		}
		if key := strings.Join(c.missing, ","); !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
		todo = append(todo, i)
	}
	if len(todo) == 0 {
		return nil
	}
	// Each worker writes a scratch set of its own per group of sources that
	// ask for the same relations: one set shared by the workers, behind a
	// lock, made writing the rows (Parquet encoding, a tenth to a third of
	// the work) serial, which caps how many cores a batch can use.
	type scratch struct {
		w       *storyline.Scratch
		dir     string
		sources []int // claimed sources whose rows it holds, in arrival order
	}
	errs := make([]error, len(claimed))
	formats := make([]string, len(claimed))
	warnings := make([][]string, len(claimed))
	placed := make([]bool, len(claimed)) // in a scratch set (written by one worker only)
	var bytes int64
	for _, i := range todo {
		bytes += claimed[i].s.Size
	}
	// Said for the whole batch before its files say it one by one, so that
	// the heap is ready before the workers first grow it.
	hugeheap.Expect(bytes)
	progress := resolveProgress(ctx)
	progress.Start(len(todo), bytes)
	workers := batchWorkers(snap.Options.MaxConcurrentSources, len(todo), bytes)
	sets := make([]map[string]*scratch, workers) // by worker, then group key
	work := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for n := range workers {
		sets[n] = map[string]*scratch{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				key := strings.Join(claimed[i].missing, ",")
				sc := sets[n][key]
				if sc == nil {
					dir, err := os.MkdirTemp(snap.TempDir, "batch-")
					var w *storyline.Scratch
					if err == nil {
						w, err = storyline.NewScratch(dir, workers, claimed[i].missing...)
					}
					if err != nil {
						errs[i] = err
						progress.Done(claimed[i].s.Size)
						continue
					}
					sc = &scratch{w: w, dir: dir}
					sets[n][key] = sc
				}
				sc.sources, placed[i] = append(sc.sources, i), true
				s := claimed[i].s
				snap.resolves.Add(1)
				formats[i], warnings[i], errs[i] = s.normalizeInto(ctx, s.Path, s.checkPin(*s.Revision.(*FileRevision)), sc.w.Add)
				progress.Done(s.Size)
			}
		}()
	}
	for _, i := range todo {
		work <- i
	}
	close(work)
	wg.Wait()
	if ctx.Err() != nil { // not cached: a later query retries
		for _, set := range sets {
			for _, sc := range set {
				sc.w.Abort()
			}
		}
		return ctx.Err()
	}
	var failed []error
	for i := range claimed {
		if !placed[i] && errs[i] != nil { // its scratch set could not be made
			for _, rel := range claimed[i].missing {
				c := &claimed[i].s.relations[partIndex(rel)]
				c.done, c.err = keep(ctx, errs[i]), errs[i]
			}
			failed = append(failed, errs[i])
		}
	}
	for _, set := range sets {
		for _, key := range keys {
			sc := set[key]
			if sc == nil {
				continue
			}
			closeErr := sc.w.Close()
			files := scratchFiles(sc.w)
			// Every source of the set may have rows in the files, even one
			// that failed half way (its queries fail on its cached error),
			// but not one no adapter recognized: it was never read past
			// detection. Counting those made a reader of one trajectory
			// among them look like a reader of a small part of a batch
			// (Engine.soloFew), which normalized it once more.
			owners := make([]string, 0, len(sc.sources))
			for _, i := range sc.sources {
				// A skipped unreadable file may have rows in them, as a
				// failed one: it stays an owner, so readers filter it out.
				var nt *notTrajectory
				if !errors.As(errs[i], &nt) || nt.skipped {
					owners = append(owners, claimed[i].s.File)
				}
			}
			if len(owners) == 0 { // the set's files hold no rows
				files = map[string][]string{}
			}
			for _, i := range sc.sources {
				s := claimed[i].s
				var nt *notTrajectory
				for _, part := range claimed[i].missing {
					c := &s.relations[partIndex(part)]
					c.done = true
					rel, _ := storyline.PartRelation(part)
					switch {
					case errors.As(errs[i], &nt):
						c.res = nt.resolved()
					case errs[i] != nil:
						c.done, c.err = keep(ctx, errs[i]), errs[i]
					case closeErr != nil:
						c.done, c.err = keep(ctx, closeErr), closeErr
					default:
						c.res = &Resolved{Files: map[string][]string{rel: files[rel]}, Dirs: []string{sc.dir}, Format: formats[i], Owners: owners, Warnings: warnings[i]}
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
			for _, i := range sc.sources {
				c := claimed[i]
				members = append(members, cacheMember{c.s, c.keys, c.cacheable, errs[i], formats[i], warnings[i]})
			}
			snap.storeBatch(ctx, members, strings.Split(key, ","), files, owners, start)
		}
	}
	if len(failed) > 0 {
		return failed[0]
	}
	return nil
}
