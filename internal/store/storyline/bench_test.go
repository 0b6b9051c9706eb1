package storyline

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/model"
)

// Lookup benchmark store: lookupSessions Storylines of lookupSteps steps
// (half with a tool call) = 10.24M steps, generated directly (not through
// JSON) and cached across runs in $TMPDIR/pchronicle-bench-lookup.
const (
	lookupSessions = 80_000
	lookupSteps    = 128
)

// BenchmarkSessionLookup measures a warm `session_id = ?` point lookup over
// the steps of a ≥10M-step store through DuckDB, and the fraction of the
// store's bytes the query reads: measured as the bytes DuckDB reads through
// read/pread (rchar of /proc/self/io, page-cache hits included; DuckDB's
// own file cache is disabled so that warm reads are still counted), and
// computed from the Parquet statistics (the row groups whose session_id
// min/max range admits the id).
//
//	go test ./internal/store/storyline -run '^$' -bench SessionLookup -benchtime 50x
func BenchmarkSessionLookup(b *testing.B) {
	g := lookupStore(b)
	var storeBytes int64
	for _, rel := range Tables {
		storeBytes += g.Manifest.Tables[rel].Bytes
	}
	db := openDuck(b)
	// One connection, so the warm-up and the measured queries share caches.
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("SET enable_external_file_cache = false"); err != nil {
		b.Fatal(err)
	}
	const q = `SELECT count(*), sum(prompt_tokens) FROM read_parquet(?) WHERE session_id = ?`
	stepsPath := g.Path(model.RelSteps)
	lookup := func(i int) {
		var n, tokens int64
		if err := db.QueryRow(q, stepsPath, sessionName(i*7919%lookupSessions)).Scan(&n, &tokens); err != nil {
			b.Fatal(err)
		}
		if n != lookupSteps {
			b.Fatalf("session %d: %d steps, want %d", i, n, lookupSteps)
		}
	}
	for i := range 5 {
		lookup(i) // warm: footer and OS page cache
	}
	before := readChars(b)
	b.ResetTimer()
	for i := range b.N {
		lookup(i + 5)
	}
	b.StopTimer()
	read := float64(readChars(b)-before) / float64(b.N)
	b.ReportMetric(float64(g.Manifest.Tables[model.RelSteps].Rows), "steps")
	b.ReportMetric(read/1e6, "MB-read/op")
	b.ReportMetric(100*read/float64(storeBytes), "%store-read/op")
	b.ReportMetric(float64(g.Manifest.Tables[model.RelSteps].RowGroups), "step-row-groups")
	b.ReportMetric(100*statsFraction(b, db, stepsPath, sessionName(12345)), "%steps-in-matching-groups")
}

// statsFraction is the share of a file's compressed column bytes that lie
// in row groups whose session_id statistics admit id.
func statsFraction(b *testing.B, db *sql.DB, path, id string) float64 {
	var match, total float64
	err := db.QueryRow(`WITH m AS (SELECT * FROM parquet_metadata(?)),
		g AS (SELECT row_group_id FROM m WHERE path_in_schema = 'session_id' AND stats_min_value <= ? AND stats_max_value >= ?)
		SELECT sum(total_compressed_size) FILTER (WHERE row_group_id IN (SELECT row_group_id FROM g)), sum(total_compressed_size) FROM m`,
		path, id, id).Scan(&match, &total)
	if err != nil {
		b.Fatal(err)
	}
	return match / total
}

func sessionName(i int) string {
	// Spread ids so that generation order is not sort order.
	return fmt.Sprintf("sess-%016x", uint64(i)*0x9E3779B97F4A7C15)
}

// lookupStore returns the cached benchmark store, building it when absent.
func lookupStore(b *testing.B) *Generation {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "pchronicle-bench-lookup")
	if s, err := Open(dir); err == nil {
		if g, err := s.Pin(); err == nil && g.Manifest.Tables[model.RelSteps].Rows == lookupSessions*lookupSteps {
			return g
		}
	}
	os.RemoveAll(dir)
	s, err := OpenOrCreate(dir)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	w, err := s.NewGeneration()
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range lookupSessions {
		if err := w.Add(benchStoryline(sessionName(i), i, t0)); err != nil {
			b.Fatal(err)
		}
	}
	g, err := w.Commit(context.Background(), nil)
	if err != nil {
		b.Fatal(err)
	}
	var total int64
	for _, rel := range Tables {
		total += g.Manifest.Tables[rel].Bytes
	}
	b.Logf("built %s: %d steps, %.0f MB, in %s", dir, g.Manifest.Tables[model.RelSteps].Rows, float64(total)/1e6, time.Since(start).Round(time.Second))
	return g
}

func benchStoryline(session string, i int, t0 time.Time) *model.Storyline {
	sl := &model.Storyline{Run: model.Run{RunID: "run-" + strconv.Itoa(i/4), SessionID: session, Status: model.StatusCompleted,
		AgentName: model.Str("bench-agent"), StartedAt: model.Time(t0), SourceFormat: "openai/chat-jsonl"}}
	sl.Steps = make([]model.Step, lookupSteps)
	for j := range sl.Steps {
		src := model.SourceUser
		if j%2 == 1 {
			src = model.SourceAgent
		}
		sl.Steps[j] = model.Step{StepID: strconv.Itoa(j), Source: src, MessageKind: "text",
			MessageValue: model.Str(fmt.Sprintf("step %d of session %d: please run the tests and report the failures", j, i)),
			Timestamp:    model.Time(t0.Add(time.Duration(i*lookupSteps+j) * time.Second)), PromptTokens: model.Int(int64(100 + j))}
		if j%2 == 1 {
			sl.ToolCalls = append(sl.ToolCalls, model.ToolCall{StepID: strconv.Itoa(j), ToolCallID: fmt.Sprintf("call_%d_%d", i, j),
				FunctionName: "bash", Arguments: model.Str(`{"command":"go test ./..."}`), ArgumentsValid: true,
				Result: model.Str("ok  \tpkg\t0.1s"), ResultStatus: model.ResultOK, ResultLink: model.LinkByID})
		}
	}
	sl.Finalize("bench/" + strconv.Itoa(i%100) + ".jsonl")
	return sl
}

// readChars is rchar of /proc/self/io: bytes this process read through
// read/pread, whether or not they came from the page cache.
func readChars(b *testing.B) int64 {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		b.Skip("needs /proc/self/io")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "rchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	b.Skip("no rchar in /proc/self/io")
	return 0
}
