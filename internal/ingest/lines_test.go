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
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
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

// normalizeAll returns every Storyline (as JSON, warnings included) and the
// error of normalizing path with NormalizeFile, or line by line with the
// adapter alone when sequential.
func normalizeAll(t *testing.T, path string, sequential bool) ([]string, error) {
	t.Helper()
	var out []string
	emit := func(sl *model.Storyline) error {
		b, err := jsonx.Marshal(sl)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
		return nil
	}
	if !sequential {
		det, err := NormalizeFile(context.Background(), path, "chats.jsonl", Options{}, emit)
		if err == nil && det.Layout != "chat-jsonl" {
			t.Fatalf("layout %q", det.Layout)
		}
		return out, err
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	src := format.Source{Path: path, File: "chats.jsonl"}
	return out, openai.New().Normalize(context.Background(), f, src, "chat-jsonl", uniqueSessions(src, emit))
}

func TestSplitByLinesGivesTheSameRowsAsSequential(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		old := runtime.GOMAXPROCS(2)
		t.Cleanup(func() { runtime.GOMAXPROCS(old) })
	}
	for _, bad := range []int{0, 1500} {
		t.Run(fmt.Sprintf("bad line %d", bad), func(t *testing.T) {
			path := bigChatFile(t, bad)
			if !takesChunks(t, path) {
				t.Fatal("the file is not read in chunks")
			}
			got, gotErr := normalizeAll(t, path, false)
			want, wantErr := normalizeAll(t, path, true)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("error in chunks: %v; line by line: %v", gotErr, wantErr)
			}
			if bad != 0 && (wantErr == nil || !strings.Contains(wantErr.Error(), fmt.Sprintf(":%d:", bad))) {
				t.Fatalf("the bad line is not reported at line %d: %v", bad, wantErr)
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
