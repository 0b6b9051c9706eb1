package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/catalog"
)

// The blow-up catalogue: queries that DuckDB cannot bound by itself under
// its memory_limit, or cannot interrupt, each with how it must end under
// the catalogue's limits. docs/testing.md records what each took.
var blowUps = []struct {
	name, sql string
	want      string // "memory", "timeout" or "either" (depends on the machine's speed)
}{
	{"fold-range", "SELECT len(range(100000000))", "memory"},
	{"fold-repeat", "SELECT length(repeat('x', 3000000000))", "memory"},
	{"unnest-range", "SELECT count(*) FROM (SELECT unnest(range(1000000000)))", "memory"},
	{"range-per-row", "SELECT sum(len(range(i + 10000000))) FROM (SELECT unnest(range(1000)) AS i)", "either"},
	{"string-agg-cross", "SELECT length(string_agg(repeat('x', 1000), ',')) FROM (SELECT unnest(range(100000)) AS a), (SELECT unnest(range(100)) AS b)", "either"},
	{"recursive-deep", "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 1000000000) SELECT count(*) FROM r", "either"},
	{"recursive-doubling", "WITH RECURSIVE r(n, l) AS (SELECT 1, [1] UNION ALL SELECT n + 1, list_concat(l, l) FROM r WHERE n < 40) SELECT max(len(l)) FROM r", "either"},
	{"values-huge", "SELECT sum(length(v)) FROM (VALUES (repeat('x', 1000000000)), (repeat('y', 1000000000)), (repeat('z', 1000000000))) t(v)", "memory"},
	{"list-concat", "SELECT len(list_concat(l, l, l, l)) FROM (SELECT range(i + 100000000) AS l FROM (SELECT unnest([1]) AS i))", "memory"},
	{"regex-replace", "SELECT length(regexp_replace(repeat('x', 300000000), 'x', 'yyyyyyyyyy', 'g'))", "either"},
	{"window-lists", "SELECT sum(len(l)) FROM (SELECT list(i) OVER (ORDER BY i ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS l FROM (SELECT unnest(range(200000)) AS i))", "either"},
	{"list-agg", "SELECT len(list(i)) FROM (SELECT unnest(range(500000000)) AS i)", "memory"},
	{"cross-count", "SELECT count(*) FROM (SELECT unnest(range(100000)) AS a), (SELECT unnest(range(100000)) AS b)", "timeout"},
	{"distinct-big", "SELECT count(DISTINCT i) FROM (SELECT unnest(range(300000000)) AS i)", "memory"},
	{"lpad-huge", "SELECT length(lpad('x', 2000000000, 'y'))", "either"},
	{"list-repeat", "SELECT len(repeat([1, 2, 3], 300000000))", "memory"},
	{"rows-per-row", "SELECT sum(x) FROM (SELECT unnest(range(i * 1000)) AS x FROM (SELECT unnest(range(1000)) AS i))", "either"},
}

// The catalogue's limits, and the bounds every query must stay within:
// its worker's peak RSS at most the memory it may map (dataLimit) plus what
// a worker maps before any query (blowUpWorkerBase, about 100 MB measured:
// the binary's pages and DuckDB's threads), the engine's process at most
// blowUpEngineRSS, and the time at most the timeout plus blowUpSlack
// (killGrace, the worker's exit, a loaded machine).
const (
	blowUpMemory     = "256MB"
	blowUpTimeout    = time.Second
	blowUpWorkerBase = 256 << 20
	blowUpEngineRSS  = 256 << 20
	blowUpSlack      = 1500 * time.Millisecond
)

const blowUpEnv = "PCHRONICLE_TEST_BLOWUP"

// blowUpResult is what TestBlowUpChild reports.
type blowUpResult struct {
	Outcome   string        // memory, timeout, ok, or the error
	Message   string        // the error's text
	Elapsed   time.Duration // the blow-up query
	After     string        // error of a normal query run afterwards ("" = it ran)
	EngineRSS int64         // peak RSS of the engine's process (bytes)
	WorkerRSS int64         // peak RSS of its largest worker (bytes)
}

// TestBlowUpsStayWithinLimits runs each catalogue query in a child process
// of the test binary, so that the peak RSS of the engine and of the
// query's worker are its alone, and checks that the query ended within its
// timeout, within its memory bound, with a classified error that names the
// flags to raise, and that the engine then still answers. Under -short the
// queries that can only end by their timeout are left out.
func TestBlowUpsStayWithinLimits(t *testing.T) {
	data, err := dataLimit(Limits{MemoryLimit: blowUpMemory})
	if err != nil {
		t.Fatal(err)
	}
	workerBound := data + blowUpWorkerBase
	for _, b := range blowUps {
		if testing.Short() && b.want != "memory" {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBlowUpChild$")
			cmd.Env = append(os.Environ(), blowUpEnv+"="+b.name)
			out, err := cmd.CombinedOutput()
			var res blowUpResult
			for _, line := range strings.Split(string(out), "\n") {
				if s, ok := strings.CutPrefix(line, "blowup: "); ok {
					err = json.Unmarshal([]byte(s), &res)
				}
			}
			if err != nil || res.Outcome == "" {
				t.Fatalf("child: %v\n%s", err, out)
			}
			t.Logf("| `%s` | %s | %.2f s | %d MB | %d MB |", b.name, res.Outcome, res.Elapsed.Seconds(), res.WorkerRSS>>20, res.EngineRSS>>20)
			if res.Outcome != "memory" && res.Outcome != "timeout" {
				t.Errorf("ended with %s (%s), want an out-of-memory error or the timeout", res.Outcome, res.Message)
			} else if b.want != "either" && res.Outcome != b.want {
				t.Errorf("ended by %s (%s), want %s", res.Outcome, res.Message, b.want)
			}
			if res.Outcome == "memory" && (!strings.Contains(res.Message, "--memory-limit") || !strings.Contains(res.Message, "--threads") || strings.Contains(res.Message, "SET ")) {
				t.Errorf("the out-of-memory error does not name --memory-limit and --threads alone: %s", res.Message)
			}
			if res.Elapsed > blowUpTimeout+blowUpSlack {
				t.Errorf("took %v, timeout %v", res.Elapsed, blowUpTimeout)
			}
			if res.WorkerRSS > workerBound {
				t.Errorf("its worker's peak RSS was %d MB, bound %d MB", res.WorkerRSS>>20, workerBound>>20)
			}
			if res.EngineRSS > blowUpEngineRSS {
				t.Errorf("the engine's peak RSS was %d MB, bound %d MB", res.EngineRSS>>20, blowUpEngineRSS>>20)
			}
			if res.After != "" {
				t.Errorf("a normal query afterwards failed: %s", res.After)
			}
		})
	}
}

// TestBlowUpChild is TestBlowUpsStayWithinLimits's child: it runs the
// catalogue query named in its environment and prints a blowUpResult.
func TestBlowUpChild(t *testing.T) {
	name := os.Getenv(blowUpEnv)
	if name == "" {
		t.Skip("run by TestBlowUpsStayWithinLimits")
	}
	var sqlText string
	for _, b := range blowUps {
		if b.name == name {
			sqlText = b.sql
		}
	}
	opts := catalog.DefaultOptions()
	opts.MemoryLimit, opts.Threads, opts.Timeout = blowUpMemory, 2, blowUpTimeout
	_, e := open(t, fixture(t, 1), opts)
	// The first query's worker starts with the engine; start timing once
	// it is ready, as a server's queries would find it.
	if _, err := e.Query(context.Background(), "SELECT 1", QueryOptions{}); err != nil {
		t.Fatal(err)
	}
	var res blowUpResult
	start := time.Now()
	_, err := e.Query(context.Background(), sqlText, QueryOptions{})
	res.Elapsed = time.Since(start)
	var qe *QueryError
	switch {
	case err == nil:
		res.Outcome = "ok"
	case errors.Is(err, context.DeadlineExceeded):
		res.Outcome = "timeout"
	case errors.As(err, &qe) && qe.Kind == KindResources:
		res.Outcome = "memory"
	default:
		res.Outcome = "error"
	}
	if err != nil {
		res.Message = err.Error()
	}
	if _, err := e.Query(context.Background(), "SELECT count(*) FROM runs", QueryOptions{Timeout: time.Minute}); err != nil {
		res.After = err.Error()
	}
	e.Close() // reaps the workers, so that their usage is counted
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	res.EngineRSS, res.WorkerRSS = self.Maxrss<<10, children.Maxrss<<10
	line, _ := json.Marshal(res)
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(w, "blowup: %s\n", line)
	w.Flush()
}

// TestRunawayQueryDoesNotStarveOthers is the server's case: engines that
// share a gate, one query that DuckDB cannot interrupt and that would take
// all the memory it could get, and ordinary queries beside it. The
// ordinary ones keep answering at once, the runaway ends by its timeout or
// its memory cap, and the engine goes on.
func TestRunawayQueryDoesNotStarveOthers(t *testing.T) {
	gate := NewGate(2, 8)
	snap, err := catalog.Build(context.Background(), []catalog.DatasetMount{{Alias: catalog.DefaultAlias, URI: fixture(t, 2)}}, catalog.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	cfg := Config{Positional: true, Limits: LimitsFrom(snap.Options), Gate: gate}
	cfg.Limits.MemoryLimit, cfg.Limits.Threads = blowUpMemory, 1
	runaway, normal := New(snap, parser, cfg), New(snap, parser, cfg)
	defer runaway.Close()
	defer normal.Close()
	const timeout = 3 * time.Second
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := runaway.Query(context.Background(), "SELECT length(lpad('x', 2000000000, 'y'))", QueryOptions{Timeout: timeout})
		done <- err
	}()
	var slowest time.Duration
	for i := 0; i < 20; i++ {
		start := time.Now()
		res, err := normal.Query(context.Background(), "SELECT count(*) FROM steps", QueryOptions{Timeout: 10 * time.Second})
		if err != nil || len(res.Rows) != 1 {
			t.Fatalf("ordinary query %d beside the runaway: %v", i, err)
		}
		slowest = max(slowest, time.Since(start))
	}
	if slowest > 2*time.Second {
		t.Errorf("the slowest ordinary query beside the runaway took %v", slowest)
	}
	err = <-done
	if d := time.Since(start); d > timeout+blowUpSlack {
		t.Errorf("the runaway ended after %v, timeout %v", d, timeout)
	}
	var qe *QueryError
	if !errors.Is(err, context.DeadlineExceeded) && !(errors.As(err, &qe) && qe.Kind == KindResources) {
		t.Fatalf("the runaway ended with %v, want its timeout or an out-of-memory error", err)
	}
	if _, err := runaway.Query(context.Background(), "SELECT count(*) FROM runs", QueryOptions{}); err != nil {
		t.Fatalf("the engine after its runaway query: %v", err)
	}
}
