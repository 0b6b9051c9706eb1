package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/query"
	"github.com/pchronicle/pchronicle/internal/route"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

// indexMemory: the runs layer of the routing index over a Storyline store
// of 1,000,000 runs (4 indexed columns each), measured as the live heap it
// adds.
func indexMemory() {
	rows := 1000000
	if *quick {
		rows = 100000
	}
	fmt.Printf("\n## routing index memory, runs layer over %d runs\n", rows)
	dir := filepath.Join(*work, fmt.Sprintf("store-%d", rows))
	if _, err := os.Stat(filepath.Join(dir, storyline.CurrentFile)); err != nil {
		st, err := storyline.OpenOrCreate(dir)
		check(err)
		w, err := st.NewGeneration()
		check(err)
		for i := 0; i < rows; i++ {
			sl := &model.Storyline{Run: model.Run{RunID: fmt.Sprintf("run-%d", i/3), SessionID: fmt.Sprintf("session-%08d", i),
				AgentID: model.Str(fmt.Sprintf("agent-%d", i%50)), AgentModelName: model.Str(fmt.Sprintf("model-%d", i%9)), SourceFormat: "bench"}}
			sl.Finalize(fmt.Sprintf("imports/f%05d.jsonl", i/100))
			check(w.Add(sl))
		}
		_, err = w.Commit(context.Background(), nil)
		check(err)
	}
	ctx := context.Background()
	snap, err := catalog.Build(ctx, []catalog.DatasetMount{{Alias: catalog.DefaultAlias, URI: dir}}, catalog.DefaultOptions())
	check(err)
	defer snap.Close()
	parser, err := query.NewParser()
	check(err)
	defer parser.Close()
	eng := engine.New(snap, parser, engine.Config{Positional: true, Limits: engine.LimitsFrom(snap.Options)})
	defer eng.Close()
	ix := route.New(snap, eng, route.Limits{MaxRows: int64(rows) + 1, MaxDistinct: 4*rows + 1})
	an, err := eng.Analyze(ctx, "SELECT * FROM runs WHERE session_id = 'session-00000042'")
	check(err)
	before := heap()
	d := ix.Route(ctx, an)
	after := heap()
	built, _ := ix.State()
	if d.Outcome != route.Applied || len(built) != 1 {
		panic(fmt.Sprintf("routing over the store: %+v %+v", d, built))
	}
	mb := float64(after-before) / (1 << 20)
	fmt.Printf("%d rows, %d distinct values: %.1f MiB live heap, %.1f MiB per million rows (a store is one source: every value maps to source 0)\n",
		built[0].Rows, built[0].Distinct, mb, mb*1e6/float64(built[0].Rows))
	runtime.KeepAlive(ix)
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
