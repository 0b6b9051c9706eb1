package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
	{"cross-count", "SELECT count(*) FROM (SELECT unnest(range(1000000)) AS a), (SELECT unnest(range(100000)) AS b)", "timeout"},
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
	WorkerRSS int64         // peak RSS of its largest worker (bytes), sampled
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
			res := runChild(t, "TestBlowUpChild", blowUpEnv+"="+b.name)
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
	stop := watchChildren()
	start := time.Now()
	_, err := e.Query(context.Background(), sqlText, QueryOptions{})
	res.Elapsed = time.Since(start)
	res.Outcome = outcome(err)
	if err != nil {
		res.Message = err.Error()
	}
	if _, err := e.Query(context.Background(), "SELECT count(*) FROM runs", QueryOptions{Timeout: time.Minute}); err != nil {
		res.After = err.Error()
	}
	e.Close()
	res.WorkerRSS, res.EngineRSS = stop(), peakRSS("self")
	report(res)
}

// runChild runs one child test of the test binary with env and returns
// the blowUpResult it reports.
func runChild(t *testing.T, test string, env ...string) blowUpResult {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	var res blowUpResult
	for _, line := range strings.Split(string(out), "\n") {
		if s, ok := strings.CutPrefix(line, "limits: "); ok {
			err = json.Unmarshal([]byte(s), &res)
		}
	}
	if err != nil || res.Outcome == "" {
		t.Fatalf("child: %v\n%s", err, out)
	}
	return res
}

// report prints res for runChild.
func report(res blowUpResult) {
	line, _ := json.Marshal(res)
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(w, "limits: %s\n", line)
	w.Flush()
}

// Peak RSS is read from /proc (VmHWM), not getrusage: a process started
// with fork and exec inherits its parent's peak in ru_maxrss.

// peakRSS returns the peak RSS of the process with /proc entry dir
// ("self" or a pid), 0 if it is gone.
func peakRSS(dir string) int64 {
	status, err := os.ReadFile("/proc/" + dir + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// watchChildren samples the peak RSS of this process's children (the
// workers) every 2 ms until stop, which returns the largest seen: a worker
// killed between two samples may have grown for up to 2 ms more.
func watchChildren() (stop func() int64) {
	done := make(chan struct{})
	result := make(chan int64)
	go func() {
		var peak int64
		for {
			tasks, _ := filepath.Glob("/proc/self/task/*/children")
			for _, task := range tasks {
				pids, _ := os.ReadFile(task)
				for _, pid := range strings.Fields(string(pids)) {
					peak = max(peak, peakRSS(pid))
				}
			}
			select {
			case <-done:
				result <- peak
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return func() int64 {
		close(done)
		return <-result
	}
}

// outcome names how a query ended.
func outcome(err error) string {
	var qe *QueryError
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &qe) && qe.Kind == KindResources:
		return "memory"
	}
	return "error"
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

const documentsEnv = "PCHRONICLE_TEST_DOCUMENTS"

// blowUpEngineBase is about what the engine's test process holds before it
// normalizes anything (the test binary, DuckDB's parser).
const blowUpEngineBase = 160 << 20

// TestDocumentsStayWithinTheirBudget normalizes four files that are read
// whole in one query, in a child process — single-document JSON files, and
// JSONL files of one long line — : under a budget for one of them at a
// time they are normalized one after another and the engine's peak RSS
// stays within the budget (it reached about 520 MB without one); under a
// budget smaller than one file, the query fails at once, naming the file
// and the option, having read nothing.
func TestDocumentsStayWithinTheirBudget(t *testing.T) {
	msg := `{"role":"user","content":"` + strings.Repeat("x", 2000) + `"},`
	doc := `{"messages":[` + strings.Repeat(msg, 16000) + `{"role":"assistant","content":"done"}]}`
	one := int64(len(doc)) * 6 // what one file counts for (format.documentCharge)
	for _, ext := range []string{"json", "jsonl"} {
		root := t.TempDir()
		for i := range 4 {
			if err := os.WriteFile(fmt.Sprintf("%s/d%d.%s", root, i, ext), []byte(doc+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			name    string
			budget  int64
			want    string
			rssOver int64 // what the engine may hold beyond blowUpEngineBase
		}{
			{"one at a time", one * 3 / 2, "ok", one * 3 / 2},
			{"none fits", one / 2, "memory", 32 << 20},
		} {
			t.Run(ext+" "+c.name, func(t *testing.T) {
				res := runChild(t, "TestDocumentsChild", fmt.Sprintf("%s=%s|%d", documentsEnv, root, c.budget))
				t.Logf("budget %d MB: %s in %.2f s, engine peak RSS %d MB", c.budget>>20, res.Outcome, res.Elapsed.Seconds(), res.EngineRSS>>20)
				if res.Outcome != c.want {
					t.Fatalf("ended with %s (%s), want %s", res.Outcome, res.Message, c.want)
				}
				if c.want == "memory" && (!strings.Contains(res.Message, "--max-document-memory") || !strings.Contains(res.Message, "d0."+ext)) {
					t.Errorf("the error does not name the file and --max-document-memory: %s", res.Message)
				}
				if !raceEnabled && res.EngineRSS > blowUpEngineBase+c.rssOver {
					t.Errorf("the engine's peak RSS was %d MB, bound %d MB", res.EngineRSS>>20, (blowUpEngineBase+c.rssOver)>>20)
				}
			})
		}
	}
}

// TestDocumentsChild is TestDocumentsStayWithinTheirBudget's child.
func TestDocumentsChild(t *testing.T) {
	arg := os.Getenv(documentsEnv)
	if arg == "" {
		t.Skip("run by TestDocumentsStayWithinTheirBudget")
	}
	root, budget, _ := strings.Cut(arg, "|")
	opts := catalog.DefaultOptions()
	if err := opts.Set("max_document_memory", budget); err != nil {
		t.Fatal(err)
	}
	_, e := open(t, root, opts)
	start := time.Now()
	res, err := e.Query(context.Background(), "SELECT count(*) FROM steps", QueryOptions{})
	out := blowUpResult{Elapsed: time.Since(start), Outcome: outcome(err)}
	switch {
	case err != nil:
		out.Message = err.Error()
	case fmt.Sprint(res.Rows) != "[[64004]]":
		out.Outcome, out.Message = "error", fmt.Sprintf("%v steps, want 64004", res.Rows)
	}
	e.Close()
	out.EngineRSS = peakRSS("self")
	report(out)
}
