// Command jsondecode measures the JSON decoders an adapter could read its
// records with, against each other, on the real-shaped corpora of
// bench/formats (internal/benchcorpus): the operation every adapter starts
// with — check that a record (a JSONL line, or a whole document) is valid
// JSON and find its top-level members — one core, the records in memory:
//
//   - encoding/json and goccy/go-json (what jsonx.Unmarshal is) into a
//     map[string]json.RawMessage: a map per object;
//   - valyala/fastjson: a reused parser building a tree of the whole
//     record, then its top-level members visited;
//   - bytedance/sonic (JIT and SIMD on amd64) into the same map, and its
//     SIMD validator followed by a split that does not validate again;
//   - the adapters' own scanner (format.ScanMembers): validates as it
//     goes and appends the members to a reused list, no map.
//
// Every decoder must agree with encoding/json on which records are valid
// and on their member names. Ratios are MB/s against the adapters'
// scanner (above 1: faster than it). See docs/performance.md, "JSON
// decoders".
//
//	go run ./bench/jsondecode [-shapes codex,atof] [-mb 100] [-runs 3]
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/bytedance/sonic"
	gojson "github.com/goccy/go-json"
	"github.com/valyala/fastjson"

	"github.com/pchronicle/pchronicle/internal/benchcorpus"
	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/fsx"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// decoder validates one record and returns its top-level member names in
// order (names is reused), or false when the record is not a valid JSON
// object.
type decoder struct {
	name    string
	decode  func(rec []byte, names []string) ([]string, bool)
	lenient bool // it accepted a damaged record: it does not validate
}

func decoders() []decoder {
	var p fastjson.Parser
	var members format.Members
	mapNames := func(m map[string]json.RawMessage, names []string) []string {
		for k := range m {
			names = append(names, k)
		}
		slices.Sort(names) // a map has no order: compared sorted
		return names
	}
	return []decoder{
		{name: "encoding/json", decode: func(rec []byte, names []string) ([]string, bool) {
			var m map[string]json.RawMessage
			if json.Unmarshal(rec, &m) != nil || m == nil {
				return names, false
			}
			return mapNames(m, names), true
		}},
		{name: "goccy/go-json", decode: func(rec []byte, names []string) ([]string, bool) {
			var m map[string]json.RawMessage
			if gojson.Unmarshal(rec, &m) != nil || m == nil {
				return names, false
			}
			return mapNames(m, names), true
		}},
		{name: "bytedance/sonic", decode: func(rec []byte, names []string) ([]string, bool) {
			var m map[string]json.RawMessage
			if sonic.ConfigStd.Unmarshal(rec, &m) != nil || m == nil {
				return names, false
			}
			return mapNames(m, names), true
		}},
		{name: "sonic.Valid, then split", decode: func(rec []byte, names []string) ([]string, bool) {
			if !sonic.Valid(rec) {
				return names, false
			}
			ms, ok := format.AppendMembers(members[:0], rec)
			members = ms
			for _, m := range ms {
				names = append(names, string(m.Name))
			}
			return names, ok
		}},
		{name: "valyala/fastjson", decode: func(rec []byte, names []string) ([]string, bool) {
			v, err := p.ParseBytes(rec)
			if err != nil {
				return names, false
			}
			o, err := v.Object()
			if err != nil {
				return names, false
			}
			o.Visit(func(k []byte, _ *fastjson.Value) { names = append(names, string(k)) })
			return names, true
		}},
		{name: "format.ScanMembers", decode: func(rec []byte, names []string) ([]string, bool) {
			i := jsonx.SkipWS(rec, 0)
			if i >= len(rec) || rec[i] != '{' {
				return names, false
			}
			end, ms, ok := format.ScanMembers(rec, i, 0, members[:0])
			members = ms
			if !ok || jsonx.SkipWS(rec, end) != len(rec) {
				return names, false
			}
			for _, m := range ms {
				names = append(names, string(m.Name))
			}
			return names, true
		}},
	}
}

func main() {
	shapes := flag.String("shapes", "codex,atof,claude,chat,openhands,atif,inspect", "shapes to measure (JSONL shapes by line, the others by document)")
	dir := flag.String("dir", filepath.Join(os.TempDir(), "pchronicle-formats"), "where bench/formats keeps its corpora (built here when missing)")
	samples := flag.String("samples", "", "the shared samples directory (default: ../shared/samples beside the repository)")
	sizeMB := flag.Int64("mb", 100, "corpus size per shape in MB")
	runs := flag.Int("runs", 3, "passes per decoder (the fastest is reported)")
	flag.Parse()
	if *samples == "" {
		*samples = filepath.Join(repoRoot(), "..", "shared", "samples")
	}
	runtime.GOMAXPROCS(1)
	fmt.Println("one thread; MB/s (wall clock) of records validated and split into their top-level members; best of", *runs)
	fmt.Println()
	decs := decoders()
	header := "| shape | records | MB |"
	sep := "|---|---|---|"
	for _, d := range decs {
		header += " " + d.name + " |"
		sep += "---|"
	}
	var rows []string
	for _, shape := range strings.Split(*shapes, ",") {
		c, err := benchcorpus.Cached(*samples, filepath.Join(*dir, shape), shape, *sizeMB<<20)
		check(err, shape)
		recs, bytes := records(c, jsonl(shape))
		check(agree(decs, recs), shape)
		header = "| shape | records | MB |"
		for _, d := range decs {
			header += " " + d.name
			if d.lenient {
				header += " (does not validate)"
			}
			header += " |"
		}
		mbps := make([]float64, len(decs))
		for i, d := range decs {
			mbps[i] = measure(d, recs, bytes, *runs)
		}
		ours := mbps[len(mbps)-1]
		row := fmt.Sprintf("| %s | %d | %.0f |", shape, len(recs), float64(bytes)/1e6)
		for _, v := range mbps {
			row += fmt.Sprintf(" %.0f (%.2f×) |", v, v/ours)
		}
		fmt.Println(row)
		rows = append(rows, row)
	}
	fmt.Println()
	fmt.Println(header)
	fmt.Println(sep)
	for _, r := range rows {
		fmt.Println(r)
	}
}

// jsonl reports whether a shape's files are read line by line.
func jsonl(shape string) bool {
	return shape != benchcorpus.ShapeATIF && shape != benchcorpus.ShapeInspect
}

// agree checks that every decoder accepts exactly the records encoding/json
// accepts, with the same member names, and marks lenient the decoders that
// accept them damaged: cut short, or with a control character in their
// middle.
func agree(decs []decoder, recs [][]byte) error {
	var want, got []string
	var damaged [][]byte
	for n := 0; n < len(recs); n += 97 {
		rec := recs[n]
		bad := slices.Clone(rec)
		bad[len(bad)/2] = 0x01
		damaged = append(damaged, rec[:len(rec)*2/3], bad)
	}
	for _, rec := range damaged {
		for i := range decs {
			if _, ok := decs[i].decode(rec, got[:0]); ok && !decs[i].lenient {
				decs[i].lenient = true
				fmt.Printf("%s accepts a damaged record, e.g. %.100q\n", decs[i].name, rec)
			}
		}
	}
	for n, rec := range recs {
		var ok bool
		want, ok = decs[0].decode(rec, want[:0])
		slices.Sort(want)
		for _, d := range decs[1:] {
			var dok bool
			got, dok = d.decode(rec, got[:0])
			slices.Sort(got)
			if dok != ok || !slices.Equal(got, want) {
				return fmt.Errorf("record %d: %s says valid=%v %q, encoding/json valid=%v %q", n, d.name, dok, got, ok, want)
			}
		}
	}
	return nil
}

// measure returns the best MB/s of runs passes over recs, timed by the
// wall clock on one thread (GOMAXPROCS=1, the collector run before each
// pass): run it on an otherwise idle machine.
func measure(d decoder, recs [][]byte, bytes int64, runs int) float64 {
	best := 0.0
	var names []string
	for range runs {
		runtime.GC()
		start := time.Now()
		for _, rec := range recs {
			names, _ = d.decode(rec, names[:0])
		}
		if mbps := float64(bytes) / 1e6 / time.Since(start).Seconds(); mbps > best {
			best = mbps
		}
	}
	return best
}

// records reads every file of a corpus: its lines, or whole documents.
func records(c *benchcorpus.ShapeCorpus, byLine bool) ([][]byte, int64) {
	var recs [][]byte
	var total int64
	for _, f := range c.Files {
		data, err := os.ReadFile(f)
		check(err, f)
		if !byLine {
			recs = append(recs, data)
			total += int64(len(data))
			continue
		}
		for line := range bytes.Lines(data) { // slices of data, which stays
			if line = bytes.TrimSpace(line); len(line) > 0 {
				recs = append(recs, line)
				total += int64(len(line))
			}
		}
	}
	return recs, total
}

func repoRoot() string {
	wd, err := os.Getwd()
	check(err, "working directory")
	root, err := fsx.Ancestor(wd, "go.mod")
	check(err, "go.mod")
	return root
}

func check(err error, what string) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "jsondecode bench: %s: %v\n", what, err)
		os.Exit(1)
	}
}
