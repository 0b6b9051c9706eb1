package claudecode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"sync/atomic"
	"testing"

	"github.com/pchronicle/pchronicle/internal/benchcorpus"
	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/format/claudecode"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// generatedSession is one Claude Code session of benchcorpus's real size
// (3 MB: hundreds of tool calls, progress lines, interleaved subagents).
func generatedSession(t *testing.T) []byte {
	t.Helper()
	c, err := benchcorpus.BuildShape("", t.TempDir(), benchcorpus.ShapeClaude, 1)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(c.Files[0])
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// setFlushBytes makes sessions deliver their rows every n bytes of lines
// for the rest of the test.
func setFlushBytes(t *testing.T, n int) {
	old := *claudecode.FlushBytes
	*claudecode.FlushBytes = n
	t.Cleanup(func() { *claudecode.FlushBytes = old })
}

func normalizeParts(t *testing.T, name string, data []byte, parts bool) []*model.Storyline {
	t.Helper()
	var out []*model.Storyline
	src := format.Source{Path: name, File: name, Parts: parts}
	err := claudecode.New().Normalize(context.Background(), bytes.NewReader(data), src, claudecode.Layout,
		func(sl *model.Storyline) error { out = append(out, sl); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func goldenJSON(t *testing.T, sls []*model.Storyline) []byte {
	t.Helper()
	out := make([]testutil.GoldenStoryline, len(sls))
	for i, sl := range sls {
		out[i] = testutil.NewGoldenStoryline(sl)
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPartsAssembleToTheWholeSession: a session delivered in parts is,
// joined, the Storylines delivered whole: every row, index, count, total
// and warning — whether parts come after every line or every 64 KiB.
func TestPartsAssembleToTheWholeSession(t *testing.T) {
	inputs := map[string][]byte{"generated.jsonl": generatedSession(t)}
	for _, name := range []string{"session-basic.jsonl", "session-subagents.jsonl", "agent-a1b2c3d.jsonl"} {
		inputs[name] = testutil.Fixture(t, name)
	}
	for _, flush := range []int{1, 64 << 10} {
		setFlushBytes(t, flush)
		for name, data := range inputs {
			whole := normalizeParts(t, name, data, false)
			parts := normalizeParts(t, name, data, true)
			if name == "generated.jsonl" && len(parts) < 2*len(whole) {
				t.Errorf("flush %d: %s came in %d parts for %d Storylines; want parts before the end", flush, name, len(parts), len(whole))
			}
			joined, err := testutil.AssembleParts(parts)
			if err != nil {
				t.Fatalf("flush %d: %s: %v", flush, name, err)
			}
			if w, j := goldenJSON(t, whole), goldenJSON(t, joined); !bytes.Equal(w, j) {
				t.Errorf("flush %d: %s: joined parts differ from the whole Storylines:\n%s", flush, name, testutil.UnifiedDiff(string(w), string(j)))
			}
		}
	}
}

// TestLongSessionStreams: a receiver that takes parts gets a session's rows
// while the file is still being read, not when it ends — what bounds the
// memory of a long session.
func TestLongSessionStreams(t *testing.T) {
	setFlushBytes(t, 64<<10)
	data := generatedSession(t)
	pr, pw := io.Pipe()
	var parts atomic.Int64
	done := make(chan error, 1)
	go func() {
		src := format.Source{Path: "s.jsonl", File: "s.jsonl", Parts: true}
		done <- claudecode.New().Normalize(context.Background(), pr, src, claudecode.Layout, func(sl *model.Storyline) error {
			parts.Add(1)
			return nil
		})
	}()
	// A write returns once the reader took it, and the reader takes more
	// only after handling the lines it holds: 2 MB in, at least 1 MB of
	// lines (far beyond any read buffer) has been handled.
	half := len(data) * 2 / 3
	if _, err := pw.Write(data[:half]); err != nil {
		t.Fatal(err)
	}
	if n := parts.Load(); n == 0 {
		t.Errorf("no part after %d of the session's %d bytes", half, len(data))
	}
	if _, err := pw.Write(data[half:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
