package main

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// LoadConfig sets up a load test.
type LoadConfig struct {
	Bin      string
	Dir      string // the Dataset; created (and grown) by the test
	Duration time.Duration
	Clients  int
	Files    int // files at the start
}

// LoadReport is what a load test saw.
type LoadReport struct {
	Requests, Failures int64
	Snapshots          int
	FilesAdded         int
	Latency            map[string][2]time.Duration // p50, p99 by kind
	Problems           []string
}

func (r LoadReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "load: %d requests, %d failures, %d snapshots seen, %d files added while serving\n", r.Requests, r.Failures, r.Snapshots, r.FilesAdded)
	kinds := make([]string, 0, len(r.Latency))
	for k := range r.Latency {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(&b, "  %-14s p50 %s  p99 %s\n", k, ms(r.Latency[k][0]), ms(r.Latency[k][1]))
	}
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "  PROBLEM: %s\n", p)
	}
	return b.String()
}

// snapshotFacts are answers that depend only on the snapshot: every answer
// naming the same snapshot_id must agree with the first one seen.
type snapshotFacts struct {
	mu    sync.Mutex
	facts map[string]map[string]string // snapshot → fact key → value
}

func (f *snapshotFacts) check(snapshot, key, value string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.facts[snapshot]
	if m == nil {
		m = map[string]string{}
		f.facts[snapshot] = m
	}
	if prev, ok := m[key]; ok && prev != value {
		return fmt.Sprintf("snapshot %s answered %s with %s and with %s", snapshot, key, prev, value)
	}
	m[key] = value
	return ""
}

// Load serves a growing Dataset with --refresh-every and drives it with
// concurrent clients. Files are only added, so within one snapshot every
// count is fixed, and across snapshots counts never go down.
func Load(cfg LoadConfig) (LoadReport, error) {
	os.RemoveAll(cfg.Dir)
	for i := 0; i < cfg.Files; i++ {
		writeChat(cfg.Dir, i)
	}
	*bin = cfg.Bin
	s := startServer(cfg.Dir, "--refresh-every", "2s")
	defer s.stop()
	rep := LoadReport{Latency: map[string][2]time.Duration{}}
	facts := &snapshotFacts{facts: map[string]map[string]string{}}
	var mu sync.Mutex
	lat := map[string][]time.Duration{}
	var files atomic.Int64
	files.Store(int64(cfg.Files))
	var requests, failures atomic.Int64
	problem := func(p string) {
		mu.Lock()
		if len(rep.Problems) < 20 {
			rep.Problems = append(rep.Problems, p)
		}
		mu.Unlock()
		failures.Add(1)
	}
	deadline := time.Now().Add(cfg.Duration)
	var wg sync.WaitGroup
	// The writer: a new file every 300 ms (the server polls every 2 s, and
	// POST /api/catalog refreshes on top of that now and then).
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; time.Now().Before(deadline); i++ {
			writeChat(cfg.Dir, int(files.Add(1)-1))
			if i%10 == 9 {
				if a := s.do("POST", "/api/catalog", nil); a.status >= 500 {
					problem(fmt.Sprintf("POST /api/catalog: %d %s", a.status, a.raw))
				}
			}
			time.Sleep(300 * time.Millisecond)
		}
	}()
	for c := 0; c < cfg.Clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 99))
			for time.Now().Before(deadline) {
				n := int(files.Load())
				i := rng.IntN(max(n-20, 1)) // files that exist by now
				kind, a := "", answer{}
				var fact func(a answer) (string, string)
				switch rng.IntN(5) {
				case 0:
					kind = "point_query"
					a = s.query(fmt.Sprintf("SELECT session_id, step_count FROM runs WHERE session_id = 's%d-a'", i), nil)
				case 1:
					kind = "run_list"
					a = s.do("GET", "/api/runs?limit=20&sort=-step_count&file_prefix="+url.QueryEscape(fmt.Sprintf("d%03d/", i%100)), nil)
					fact = func(a answer) (string, string) { return "runs-total:" + fmt.Sprint(i%100), fmt.Sprint(a.body["total"]) }
				case 2:
					kind = "storyline"
					a = s.do("GET", fmt.Sprintf("/api/storyline/steps?file=%s&session_id=s%d-b&limit=50", url.QueryEscape(fmt.Sprintf("d%03d/run-%06d.jsonl", i%100, i)), i), nil)
					fact = func(a answer) (string, string) {
						return fmt.Sprintf("steps:%d", i), fmt.Sprint(len(a.body["steps"].([]any)))
					}
				case 3:
					kind = "aggregate"
					a = s.query("SELECT count(*) AS runs, sum(tool_call_count) AS calls FROM runs", nil)
					fact = func(a answer) (string, string) { return "aggregate", fmt.Sprint(a.body["rows"]) }
				default:
					kind = "catalog"
					a = s.do("GET", "/api/catalog", nil)
					fact = func(a answer) (string, string) {
						ds := a.body["datasets"].([]any)[0].(map[string]any)
						return "sources", fmt.Sprint(ds["sources"])
					}
				}
				requests.Add(1)
				mu.Lock()
				lat[kind] = append(lat[kind], a.took)
				mu.Unlock()
				switch {
				case a.status >= 500 || a.status < 0:
					problem(fmt.Sprintf("%s: %d %s", kind, a.status, a.raw))
					continue
				case a.status != 200:
					problem(fmt.Sprintf("%s: unexpected %d %s", kind, a.status, a.raw))
					continue
				}
				snap, _ := a.body["snapshot_id"].(string)
				if snap == "" {
					problem(kind + ": no snapshot_id")
					continue
				}
				if fact != nil {
					k, v := fact(a)
					if p := facts.check(snap, k, v); p != "" {
						problem(p)
					}
				}
			}
		}(c)
	}
	wg.Wait()
	rep.Requests, rep.Failures = requests.Load(), failures.Load()
	rep.Snapshots = len(facts.facts)
	rep.FilesAdded = int(files.Load()) - cfg.Files
	for k, d := range lat {
		rep.Latency[k] = [2]time.Duration{pct(d, 50), pct(d, 99)}
	}
	// Across snapshots, the total of runs only grows (files are only added).
	var totals []int
	for _, m := range facts.facts {
		if v, ok := m["aggregate"]; ok {
			var runs, calls int
			fmt.Sscanf(strings.Trim(v, "[]"), "%d %d", &runs, &calls)
			totals = append(totals, runs)
		}
	}
	slices.Sort(totals)
	if len(totals) > 0 && totals[0] < 2*cfg.Files {
		rep.Problems = append(rep.Problems, fmt.Sprintf("a snapshot counted %d runs, fewer than the %d at the start", totals[0], 2*cfg.Files))
		rep.Failures++
	}
	return rep, nil
}
