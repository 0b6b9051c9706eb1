package cli_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

func runCLI(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return testutil.RunInput(t, stdin, args...)
}

// canonicalLine builds one valid wire line; over replaces raw JSON members.
func canonicalLine(id, session string, seq int, over ...string) string {
	fields := map[string]string{
		"v": "1", "event_id": `"` + id + `"`, "run_id": `"r-` + session + `"`, "session_id": `"` + session + `"`,
		"seq": fmt.Sprint(seq), "ts": fmt.Sprintf(`"2025-01-01T00:00:%02dZ"`, seq%60), "kind": `"message"`,
		"payload": `{"source":"user","content":"hello"}`,
	}
	for i := 0; i+1 < len(over); i += 2 {
		fields[over[i]] = over[i+1]
	}
	var parts []string
	for _, k := range []string{"v", "event_id", "run_id", "session_id", "seq", "ts", "kind", "payload"} {
		if v, ok := fields[k]; ok && v != "" {
			parts = append(parts, fmt.Sprintf("%q:%s", k, v))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

func TestEventsAppendBadInput(t *testing.T) {
	good := lines(canonicalLine("a1", "s1", 0), canonicalLine("a2", "s1", 1), canonicalLine("a3", "s2", 0))
	next := canonicalLine("b1", "s1", 2)
	tests := []struct {
		name  string
		input string
		want  string // in stderr, after "events.jsonl:"
	}{
		{"truncated line", lines(next, canonicalLine("b2", "s1", 3)[:40]), "events.jsonl:2: "},
		{"wrong type", lines(next, canonicalLine("b2", "s1", 3, "seq", `"3"`)), "events.jsonl:2: seq: must be an integer"},
		{"missing field", lines(next, canonicalLine("b2", "s1", 3, "kind", "")), "events.jsonl:2: kind: required field is missing"},
		{"duplicate id in input", lines(next, canonicalLine("b1", "s2", 5)), `events.jsonl:2: event_id: duplicate event_id "b1"`},
		{"duplicate id in store", lines(next, canonicalLine("a3", "s3", 0)), `events.jsonl:2: event_id: duplicate event_id "a3"`},
		{"seq behind store", lines(canonicalLine("b1", "s1", 1)), "events.jsonl:1: seq: seq not strictly increasing within session_id: 1 after 1"},
		{"seq not monotonic in input", lines(next, canonicalLine("b2", "s1", 2)), "events.jsonl:2: seq: seq not strictly increasing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			store := filepath.Join(dir, "events.lance")
			if _, errOut, code := runCLI(t, good, "events", "append", store, "-"); code != 0 {
				t.Fatalf("seed append: %s", errOut)
			}
			before := storeSnapshot(t, store)
			file := filepath.Join(dir, "events.jsonl")
			if err := os.WriteFile(file, []byte(tt.input), 0o644); err != nil {
				t.Fatal(err)
			}
			_, errOut, code := runCLI(t, "", "events", "append", store, file)
			if code == 0 || !strings.Contains(errOut, tt.want) || !strings.Contains(errOut, "nothing appended") {
				t.Fatalf("exit %d, stderr %q; want an error containing %q", code, errOut, tt.want)
			}
			if after := storeSnapshot(t, store); after != before {
				t.Fatalf("store changed by a rejected append:\nbefore %s\nafter  %s", before, after)
			}
			// The good continuation still goes in.
			if _, errOut, code := runCLI(t, lines(next), "events", "append", store); code != 0 {
				t.Fatalf("append after rejection: %s", errOut)
			}
		})
	}
}

func TestEventsCorruptManifest(t *testing.T) {
	store := filepath.Join(t.TempDir(), "events.lance")
	if _, errOut, code := runCLI(t, lines(canonicalLine("a1", "s1", 0)), "events", "append", store); code != 0 {
		t.Fatal(errOut)
	}
	manifest := filepath.Join(store, "_manifest.json")
	data, _ := os.ReadFile(manifest)
	if err := os.WriteFile(manifest, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"events", "show", store},
		{"events", "compact", store},
		{"events", "append", store, "-"},
	} {
		_, errOut, code := runCLI(t, lines(canonicalLine("b1", "s1", 1)), args...)
		if code == 0 || !strings.Contains(errOut, manifest+": corrupt manifest: invalid JSON") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	if got, _ := os.ReadFile(manifest); !bytes.Equal(got, data[:len(data)/2]) {
		t.Error("a failed command rewrote the corrupt manifest")
	}
}

func TestEventsShowAndCompact(t *testing.T) {
	store := filepath.Join(t.TempDir(), "events.lance")
	for i := 0; i < 3; i++ {
		if _, errOut, code := runCLI(t, lines(canonicalLine(fmt.Sprint("e", i), "s1", i)), "events", "append", store); code != 0 {
			t.Fatal(errOut)
		}
	}
	if _, errOut, code := runCLI(t, "", "events", "compact", store); code != 0 || !strings.Contains(errOut, "compacted 3 segments into 1 (revision 4)") {
		t.Fatalf("compact: exit %d, %s", code, errOut)
	}
	out, errOut, code := runCLI(t, "", "events", "show", store, "--format", "jsonl")
	if code != 0 || !strings.Contains(errOut, "revision 4, fact_watermark 3, layout_watermark 4, 3 events in 1 segments") ||
		!strings.Contains(out, `"fact_revisions":"1-3"`) {
		t.Fatalf("show: exit %d\n%s\n%s", code, out, errOut)
	}
}

// storeSnapshot describes everything visible in a store: the manifest
// bytes and the segment file names.
func storeSnapshot(t *testing.T, store string) string {
	t.Helper()
	m, err := os.ReadFile(filepath.Join(store, "_manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(store, "segments"))
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return string(m) + strings.Join(names, ",")
}

func TestProjectCLI(t *testing.T) {
	root := t.TempDir()
	store := filepath.Join(root, "events.lance")
	first := lines(canonicalLine("a1", "s1", 0), canonicalLine("a2", "s2", 0), canonicalLine("a3", "s3", 0))
	if _, errOut, code := runCLI(t, first, "events", "append", store); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := runCLI(t, "", "project", store); code != 0 || !strings.Contains(errOut, "full: 3 sessions") {
		t.Fatalf("project: exit %d, %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, lines(canonicalLine("b1", "s2", 1)), "events", "append", store); code != 0 {
		t.Fatal(errOut)
	}
	_, errOut, code := runCLI(t, "", "project", store)
	if code != 0 || !strings.Contains(errOut, "incremental: 1 sessions, 2 events normalized; 3 runs, 4 steps") {
		t.Fatalf("incremental project: exit %d, %s", code, errOut)
	}
	if _, errOut, _ := runCLI(t, "", "project", store); !strings.Contains(errOut, "is up to date") {
		t.Fatalf("third project: %s", errOut)
	}
	if _, err := os.Stat(filepath.Join(root, "events.storyline", "CURRENT")); err != nil {
		t.Fatal(err)
	}
}
