package ingest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// TestEverySampleIsDetectedAndNormalizes runs every public sample through
// detection and normalization: each must be claimed by the adapter of its
// family, produce at least one Storyline, and have unique session ids.
func TestEverySampleIsDetectedAndNormalizes(t *testing.T) {
	root := testutil.SamplesDir(t)
	want := map[string]string{"atif": format.ATIF, "openai": format.OpenAI, "actf_candidates": format.ACTF,
		"inspect": format.Inspect}
	for _, rel := range testutil.SampleFiles(t) {
		t.Run(rel, func(t *testing.T) {
			family := strings.SplitN(rel, "/", 2)[0]
			seen := map[string]bool{}
			n := 0
			det, err := NormalizeFile(context.Background(), filepath.Join(root, rel), rel, Options{}, func(sl *model.Storyline) error {
				n++
				if seen[sl.Run.SessionID] {
					t.Errorf("session_id %q repeats", sl.Run.SessionID)
				}
				seen[sl.Run.SessionID] = true
				if sl.Run.File != rel || sl.Run.SourceFormat == "" || sl.Run.RunID == "" {
					t.Errorf("incomplete run row: %+v", sl.Run)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if det.Format != want[family] {
				t.Fatalf("detected %s/%s, want %s", det.Format, det.Layout, want[family])
			}
			if n == 0 {
				t.Fatal("no Storyline")
			}
		})
	}
}

func TestUnrecognizedFilesAreExplained(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"config.json": `{"name": "my-package", "version": "1.0.0", "dependencies": {}}`,
		"empty.json":  "",
		"text.jsonl":  "hello world\n",
		"nums.json":   `[1, 2, 3]`,
	} {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(content), 0o644)
		_, err := NormalizeFile(context.Background(), path, name, Options{}, func(*model.Storyline) error { return nil })
		var ue *format.UnrecognizedError
		if !errors.As(err, &ue) || !errors.Is(err, format.ErrUnrecognized) {
			t.Errorf("%s: want UnrecognizedError, got %v", name, err)
			continue
		}
		if !strings.Contains(err.Error(), name) || len(ue.Reason) < 10 {
			t.Errorf("%s: unhelpful message %q", name, err)
		}
	}
	_, err := NormalizeFile(context.Background(), filepath.Join(dir, "config.json"), "c", Options{}, nil)
	if !strings.Contains(err.Error(), "[name, version, dependencies]") {
		t.Errorf("the reason should list the keys it saw: %v", err)
	}
}

func TestDetectionReadsOnlyThePrefix(t *testing.T) {
	// A 3 MiB ATIF document whose steps start past a 64 KiB detection limit
	// is still detected from its leading keys.
	big := `{"schema_version":"ATIF-v1.6","session_id":"s","agent":{"name":"a","version":"1"},"notes":"` +
		strings.Repeat("x", 3<<20) + `","steps":[{"step_id":1,"source":"user","message":"hi"}]}`
	path := filepath.Join(t.TempDir(), "big.json")
	os.WriteFile(path, []byte(big), 0o644)
	det, err := DetectFile(path, Options{MaxDetectionBytes: 64 << 10})
	if err != nil || det.Format != format.ATIF {
		t.Fatalf("DetectFile = %+v, %v", det, err)
	}
}

func TestRepeatedSessionIDsAreRenamed(t *testing.T) {
	line := `{"messages":[{"role":"user","content":"hi"}],"custom_id":"same"}` + "\n"
	path := filepath.Join(t.TempDir(), "dup.jsonl")
	os.WriteFile(path, []byte(line+line+line), 0o644)
	var ids []string
	_, err := NormalizeFile(context.Background(), path, "dup.jsonl", Options{}, func(sl *model.Storyline) error {
		ids = append(ids, sl.Run.SessionID)
		for _, st := range sl.Steps {
			if st.SessionID != sl.Run.SessionID {
				t.Errorf("step keeps old session id %q", st.SessionID)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("ids not unique: %v", ids)
		}
		seen[id] = true
	}
}

// TestSmallFilesReadOnceEqualStreaming: NormalizeFile reads a file smaller
// than the detection limit into memory once; every sample must normalize to
// exactly what the streaming path (Normalize on the open file) gives.
func TestSmallFilesReadOnceEqualStreaming(t *testing.T) {
	root := testutil.SamplesDir(t)
	collect := func(out *[]string) format.Emit {
		return func(sl *model.Storyline) error {
			b, err := jsonx.Marshal(sl)
			*out = append(*out, string(b))
			return err
		}
	}
	for _, rel := range testutil.SampleFiles(t) {
		path := filepath.Join(root, rel)
		var whole, streamed []string
		if _, err := NormalizeFile(context.Background(), path, rel, Options{}, collect(&whole)); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Normalize(context.Background(), f, format.Source{Path: path, File: rel}, Options{}, collect(&streamed))
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(whole, "\n") != strings.Join(streamed, "\n") {
			t.Errorf("%s: reading the file once gives different Storylines than streaming it", rel)
		}
	}
}

// TestCheckRunsBeforeAndAfterTheRead: Options.Check sees the open file
// before anything is read and again after normalization; either failing
// fails the file (a Snapshot's pin check relies on both).
func TestCheckRunsBeforeAndAfterTheRead(t *testing.T) {
	path := filepath.Join(testutil.SamplesDir(t), testutil.SampleFiles(t)[0])
	changed := errors.New("changed")
	for failAt := 1; failAt <= 2; failAt++ {
		calls, emitted := 0, 0
		opts := Options{Check: func(fi os.FileInfo) error {
			calls++
			if fi.Size() == 0 {
				t.Error("Check got no file information")
			}
			if calls == failAt {
				return changed
			}
			return nil
		}}
		_, err := NormalizeFile(context.Background(), path, "x", opts, func(*model.Storyline) error { emitted++; return nil })
		if !errors.Is(err, changed) {
			t.Fatalf("failing check %d: err = %v", failAt, err)
		}
		if failAt == 1 && emitted > 0 {
			t.Fatal("the file was read although the first check failed")
		}
		if failAt == 2 && emitted == 0 {
			t.Fatal("the second check did not come after normalization")
		}
	}
}

// TestAdapterFixturesAreDetected runs the fixtures of formats no public
// sample exists for through the registered adapter list: each must be
// claimed by its own adapter, not a more generic one, and normalize. (That
// no sample changes its detection is TestEverySampleIsDetectedAndNormalizes.)
func TestAdapterFixturesAreDetected(t *testing.T) {
	dir := filepath.Join(testutil.RepoRoot(t), "internal", "format")
	for _, tt := range []struct{ file, format, layout string }{
		{"claudecode/testdata/session-basic.jsonl", format.ClaudeCode, "jsonl"},
		{"claudecode/testdata/session-subagents.jsonl", format.ClaudeCode, "jsonl"},
		{"claudecode/testdata/agent-a1b2c3d.jsonl", format.ClaudeCode, "jsonl"},
		{"openhands/testdata/output.jsonl", format.OpenHands, "jsonl"},
		{"openhands/testdata/trajectory-ipython.json", format.OpenHands, "json"},
	} {
		path := filepath.Join(dir, filepath.FromSlash(tt.file))
		n := 0
		det, err := NormalizeFile(context.Background(), path, tt.file, Options{}, func(*model.Storyline) error { n++; return nil })
		if err != nil || n == 0 {
			t.Errorf("%s: %d Storylines, %v", tt.file, n, err)
		}
		if det.Format != tt.format || det.Layout != tt.layout {
			t.Errorf("%s: detected %s/%s, want %s/%s", tt.file, det.Format, det.Layout, tt.format, tt.layout)
		}
	}
}
