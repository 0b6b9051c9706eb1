package ingest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/format/openai"
	"github.com/pchronicle/pchronicle/internal/format/openhands"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// bigChatFile writes a chat JSONL larger than splitMinBytes whose lines
// exercise what spans lines or depends on their numbers: repeated ids
// (renamed #n in file order), lines without an id (named by their line),
// blank lines, lines with warnings, a line longer than a chunk and the
// read buffer; bad, when set, is a line that is not JSON at that line
// number.
func bigChatFile(t *testing.T, bad int) string {
	t.Helper()
	var b bytes.Buffer
	out := strings.Repeat("output line of a tool run\n", 120)
	for i := 1; b.Len() < splitMinBytes+3*chunkBytes; i++ {
		switch {
		case i == bad:
			b.WriteString(`{"messages": [` + "\n")
			continue
		case i%97 == 0:
			b.WriteString("\n") // blank lines count in line numbers
			continue
		case i%89 == 0:
			b.WriteString(`{"id": "conv-7", "messages": "not an array"}` + "\n") // a warning and a repeated id
			continue
		}
		id := ""
		if i%3 != 0 {
			id = fmt.Sprintf(`"id": "conv-%d", `, i%500) // every id repeats
		}
		args, _ := jsonx.Marshal(map[string]any{"cmd": fmt.Sprintf("ls %d", i)})
		result := out
		if i == 1800 {
			result = strings.Repeat(out, 1000) // 3 MB on one line
		}
		fmt.Fprintf(&b, `{%s"model": "m", "messages": [{"role": "user", "content": "task %d"}, `+
			`{"role": "assistant", "content": null, "tool_calls": [{"id": "c%d", "type": "function", "function": {"name": "bash", "arguments": %q}}]}, `+
			`{"role": "tool", "tool_call_id": "c%d", "content": %q}]}`+"\n", id, i, i, args, i, result)
	}
	path := filepath.Join(t.TempDir(), "chats.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// bigOpenHandsFile writes an evaluation output.jsonl larger than
// splitMinBytes from the real samples' instances, each copy told apart by
// a member of its own (so that a chunk's Storylines differ from the next
// chunk's, whose bytes may reuse its buffer).
func bigOpenHandsFile(t *testing.T) string {
	t.Helper()
	var lines [][]byte
	for _, name := range []string{"openhands-benchmarks_openagentsafety_v1-sdk_output.jsonl", "openhands_resolver_mock_output.jsonl"} {
		data, err := os.ReadFile(filepath.Join(testutil.SamplesDir(t), "openhands", name))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range bytes.Split(data, []byte("\n")) {
			if l = bytes.TrimSpace(l); len(l) > 0 && l[0] == '{' {
				lines = append(lines, l)
			}
		}
	}
	var b bytes.Buffer
	for k := 0; b.Len() < splitMinBytes+3*chunkBytes; k++ {
		l := lines[k%len(lines)]
		fmt.Fprintf(&b, `{"copy": %d, %s`+"\n", k, l[1:])
	}
	path := filepath.Join(t.TempDir(), "output.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// normalizeAll returns every Storyline (as JSON, warnings included) and the
// error of normalizing path with NormalizeFile, or line by line with the
// adapter alone when sequential. NormalizeFile's Storylines are kept as
// emitted and encoded only at the end, by when the chunk buffers they were
// read from have been reused for later chunks.
func normalizeAll(t *testing.T, path string, adapter format.Adapter, layout string, sequential bool) ([]string, error) {
	t.Helper()
	src := format.Source{Path: path, File: filepath.Base(path)}
	encode := func(sl *model.Storyline) string {
		b, err := jsonx.Marshal(sl)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var out []string
	if !sequential {
		var kept []*model.Storyline
		det, err := NormalizeFile(context.Background(), path, src.File, Options{}, func(sl *model.Storyline) error {
			kept = append(kept, sl)
			return nil
		})
		if err == nil && det.Layout != layout {
			t.Fatalf("layout %q, want %q", det.Layout, layout)
		}
		for _, sl := range kept {
			out = append(out, encode(sl))
		}
		return out, err
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return out, adapter.Normalize(context.Background(), f, src, layout, uniqueSessions(src, func(sl *model.Storyline) error {
		out = append(out, encode(sl))
		return nil
	}))
}

func TestSplitByLinesGivesTheSameRowsAsSequential(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		old := runtime.GOMAXPROCS(2)
		t.Cleanup(func() { runtime.GOMAXPROCS(old) })
	}
	cases := []struct {
		name    string
		path    string
		adapter format.Adapter
		layout  string
		bad     int
	}{
		{"chat JSONL", bigChatFile(t, 0), openai.New(), "chat-jsonl", 0},
		{"chat JSONL, bad line 1500", bigChatFile(t, 1500), openai.New(), "chat-jsonl", 1500},
		{"OpenHands output.jsonl", bigOpenHandsFile(t), openhands.New(), openhands.LayoutJSONL, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !takesChunks(t, c.path) {
				t.Fatal("the file is not read in chunks")
			}
			got, gotErr := normalizeAll(t, c.path, c.adapter, c.layout, false)
			want, wantErr := normalizeAll(t, c.path, c.adapter, c.layout, true)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("error in chunks: %v; line by line: %v", gotErr, wantErr)
			}
			if c.bad != 0 && (wantErr == nil || !strings.Contains(wantErr.Error(), fmt.Sprintf(":%d:", c.bad))) {
				t.Fatalf("the bad line is not reported at line %d: %v", c.bad, wantErr)
			}
			if len(got) != len(want) || len(want) < 100 {
				t.Fatalf("%d Storylines in chunks, %d line by line", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("Storyline %d differs:\nchunks: %.600s\nlines:  %.600s", i, got[i], want[i])
				}
			}
		})
	}
}

// takesChunks reports whether NormalizeFile reads path in chunks.
func takesChunks(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	p, err := format.ReadProbe(f, path, format.DefaultMaxDetectionBytes)
	if err != nil {
		t.Fatal(err)
	}
	det, err := Detect(p)
	if err != nil {
		t.Fatal(err)
	}
	return splittable(det, p, st.Size()) != nil
}
