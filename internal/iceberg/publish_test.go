package iceberg

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pchronicle/pchronicle/internal/model"
)

// runsOnly is a RowSource of one runs row per kept input, with the given
// status, and no steps or tool calls.
func runsOnly(status string) RowSource {
	return func(rel string, keep map[string]bool) (array.RecordReader, error) {
		sc, err := arrowSchema(rel)
		if err != nil {
			return nil, err
		}
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		defer b.Release()
		if rel == model.RelRuns {
			for file := range keep {
				if err := appendRow(b, model.Values(&model.Run{File: file, RunID: "r-" + file, SessionID: "s-" + file, Status: status})); err != nil {
					return nil, err
				}
			}
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		return array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	}
}

// TestPublishIsIdempotentAndReplacesPerInput checks the commit rules on
// one table: the same identities commit nothing, a changed input's row is
// replaced (not added), the others' files are kept, and the files a
// Dataset would pin are the table's own.
func TestPublishIsIdempotentAndReplacesPerInput(t *testing.T) {
	ctx := context.Background()
	set := openSet(t, t.TempDir())
	if err := set.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	inputs := []Input{{File: "a.json", Identity: "v2 size=1 mtime=1"}, {File: "b.json", Identity: "v2 size=2 mtime=2"}}
	commits, err := set.Publish(ctx, inputs, runsOnly("done"))
	if err != nil {
		t.Fatal(err)
	}
	if commits[0].Snapshot == 0 || commits[0].Inputs != 2 {
		t.Fatalf("first publish: %+v", commits)
	}
	first := commits[0].Snapshot

	commits, err = set.Publish(ctx, inputs, runsOnly("done"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range commits {
		if c.Snapshot != 0 {
			t.Fatalf("re-publish of the same identities committed %+v", c)
		}
	}

	inputs[1].Identity = "v2 size=3 mtime=3"
	commits, err = set.Publish(ctx, inputs, runsOnly("changed"))
	if err != nil {
		t.Fatal(err)
	}
	if commits[0].Snapshot == 0 || commits[0].Inputs != 1 {
		t.Fatalf("publish of one changed input: %+v", commits)
	}
	tbl, err := set.Table(ctx, model.RelRuns)
	if err != nil {
		t.Fatal(err)
	}
	if p := tbl.CurrentSnapshot().ParentSnapshotID; p == nil || *p != first {
		t.Fatalf("the replacement's parent is %v, want %d", p, first)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	got := map[string]string{}
	tr := array.NewTableReader(at, 100)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		files := rec.Column(0).(*array.String)
		status := rec.Column(int(at.Schema().FieldIndices("status")[0])).(*array.String)
		for i := range int(rec.NumRows()) {
			if _, dup := got[files.Value(i)]; dup {
				t.Fatalf("%s has two rows: its old row was not replaced", files.Value(i))
			}
			got[files.Value(i)] = status.Value(i)
		}
	}
	if got["a.json"] != "done" || got["b.json"] != "changed" || len(got) != 2 {
		t.Fatalf("rows after the change: %v", got)
	}
	if ids := Recorded(tbl); ids["b.json"] != "v2 size=3 mtime=3" || ids["a.json"] != "v2 size=1 mtime=1" {
		t.Fatalf("recorded identities %v", ids)
	}

	files, err := set.Files(ctx)
	if err != nil {
		t.Fatal(err)
	}
	runs := files[model.RelRuns]
	if runs.Snapshot != tbl.CurrentSnapshot().SnapshotID || len(runs.Files) == 0 || runs.Bytes == 0 {
		t.Fatalf("Files: %+v", runs)
	}
	if st := files[model.RelSteps]; st.Snapshot == 0 || len(st.Files) != 0 {
		t.Fatalf("steps were committed empty, Files says %+v", st)
	}
}
