package storyline

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/pchronicle/pchronicle/internal/model"
)

// genStoryline builds a deterministic Storyline with n steps, every other
// step carrying a tool call.
func genStoryline(file, session string, n int) *model.Storyline {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	sl := &model.Storyline{Run: model.Run{
		RunID:        "run-" + session,
		SessionID:    session,
		AgentName:    model.Str("agent"),
		StartedAt:    model.Time(t0),
		Status:       model.StatusCompleted,
		SourceFormat: "atif/json",
	}}
	for i := range n {
		st := model.Step{
			StepID:       fmt.Sprint(i),
			Source:       model.SourceAgent,
			MessageKind:  "text",
			MessageValue: model.Str(fmt.Sprintf("message %d of %s", i, session)),
			Timestamp:    model.Time(t0.Add(time.Duration(i) * time.Second)),
			PromptTokens: model.Int(int64(10 + i)),
		}
		sl.Steps = append(sl.Steps, st)
		if i%2 == 1 {
			sl.ToolCalls = append(sl.ToolCalls, model.ToolCall{
				StepID:       st.StepID,
				ToolCallID:   fmt.Sprintf("call-%d", i),
				FunctionName: "bash",
				Arguments:    model.Str(`{"cmd":"ls"}`),
				ResultStatus: model.ResultOK,
			})
		}
	}
	sl.Finalize(file)
	return sl
}

// writeScratch writes Storylines into a new Scratch of parts (every
// relation whole when none) that is one of concurrent sets.
func writeScratch(t testing.TB, concurrent int, parts []string, sls ...*model.Storyline) *Scratch {
	t.Helper()
	sc, err := NewScratch(t.TempDir(), concurrent, parts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, sl := range sls {
		if err := sc.Add(sl); err != nil {
			t.Fatal(err)
		}
	}
	if err := sc.Close(); err != nil {
		t.Fatal(err)
	}
	return sc
}

// counts is rows per relation.
type counts map[string]int64

func (c counts) add(sl *model.Storyline) {
	c[model.RelRuns]++
	c[model.RelSteps] += int64(len(sl.Steps))
	c[model.RelToolCalls] += int64(len(sl.ToolCalls))
}

func manifestCounts(g *Generation) counts {
	c := counts{}
	for _, rel := range Tables {
		c[rel] = g.Manifest.Tables[rel].Rows
	}
	return c
}

// writeGeneration publishes a generation with the given Storylines.
func writeGeneration(t testing.TB, s *Store, sls ...*model.Storyline) *Generation {
	t.Helper()
	w, err := s.NewGeneration()
	if err != nil {
		t.Fatal(err)
	}
	for _, sl := range sls {
		if err := w.Add(sl); err != nil {
			t.Fatal(err)
		}
	}
	g, err := w.Commit(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func newStore(t testing.TB) *Store {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	s, err := OpenOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func openDuck(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// duckCounts counts the rows of a pinned generation through DuckDB.
func duckCounts(ctx context.Context, db *sql.DB, g *Generation) (counts, error) {
	c := counts{}
	for _, rel := range Tables {
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM read_parquet(?)", g.Path(rel)).Scan(&n); err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		c[rel] = n
	}
	return c, nil
}
