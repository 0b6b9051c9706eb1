package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/format/canonical"
	"github.com/pchronicle/pchronicle/internal/ingest"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// sampleFiles lists the samples under the given sample directories that
// are trajectories, relative to the samples directory.
func sampleFiles(t *testing.T, dirs ...string) (string, []string) {
	var out []string
	for _, rel := range testutil.SampleFiles(t) {
		for _, d := range dirs {
			if !strings.HasPrefix(rel, d+"/") {
				continue
			}
			_, err := ingest.DetectFile(filepath.Join(testutil.SamplesDir(t), rel), ingest.Options{})
			if errors.Is(err, format.ErrUnrecognized) {
				continue // e.g. a lone Responses item: not a trajectory
			}
			out = append(out, rel)
		}
	}
	if len(out) == 0 {
		t.Fatal("no samples")
	}
	return testutil.SamplesDir(t), out
}

func normalizeFile(t *testing.T, root, rel string) []*model.Storyline {
	t.Helper()
	var out []*model.Storyline
	_, err := ingest.NormalizeFile(context.Background(), filepath.Join(root, rel), rel, ingest.Options{}, func(sl *model.Storyline) error {
		out = append(out, sl)
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return out
}

// renormalize reads exported bytes back, checking the detected format.
func renormalize(t *testing.T, name string, data []byte, wantFormat string) []*model.Storyline {
	t.Helper()
	var out []*model.Storyline
	det, err := ingest.Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: name, File: name}, ingest.Options{}, func(sl *model.Storyline) error {
		out = append(out, sl)
		return nil
	})
	if err != nil {
		t.Fatalf("%s: re-normalizing: %v\n%s", name, err, head(data))
	}
	if det.Format != wantFormat {
		t.Fatalf("%s: exported bytes detected as %s, want %s", name, det.Format, wantFormat)
	}
	return out
}

func head(b []byte) string {
	if len(b) > 600 {
		b = b[:600]
	}
	return string(b)
}

// shape is what a round trip must keep of a Storyline.
type shape struct {
	Steps, StepCount, ToolCalls, ToolCallCount, Linked int
	Prompt, Completion                                 int64
	Calls                                              string // function:result-status per call
}

func shapeOf(sl *model.Storyline) shape {
	s := shape{Steps: len(sl.Steps), StepCount: int(sl.Run.StepCount), ToolCalls: len(sl.ToolCalls), ToolCallCount: int(sl.Run.ToolCallCount)}
	if sl.Run.PromptTokens != nil {
		s.Prompt = *sl.Run.PromptTokens
	}
	if sl.Run.CompletionTokens != nil {
		s.Completion = *sl.Run.CompletionTokens
	}
	var calls []string
	for _, tc := range sl.ToolCalls {
		if tc.ResultStatus != model.ResultMissing {
			s.Linked++
		}
		calls = append(calls, tc.FunctionName+":"+tc.ResultStatus+":"+fmt.Sprint(len(model.Deref(tc.Result))))
	}
	s.Calls = strings.Join(calls, ",")
	return s
}

// linkage is what every format keeps: the calls, in order, with their
// results.
func linkage(s shape) shape {
	return shape{ToolCalls: s.ToolCalls, Linked: s.Linked, Calls: s.Calls}
}

func TestRoundTripCanonical(t *testing.T) {
	root, files := sampleFiles(t, "atif", "openai")
	for _, rel := range files {
		t.Run(rel, func(t *testing.T) {
			orig := normalizeFile(t, root, rel)
			var buf bytes.Buffer
			w, _ := New(Canonical, &buf, "")
			for _, sl := range orig {
				if err := w.Write("ds", sl); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			// Every line is valid wire format, and the stream obeys the
			// stream rules (unique ids, increasing seq).
			v := canonical.NewValidator()
			for i, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
				e, err := canonical.DecodeEvent(line)
				if err == nil {
					err = v.Check(&e)
				}
				if err != nil {
					t.Fatalf("line %d: %v\n%s", i+1, err, line)
				}
			}
			back := renormalize(t, "export.jsonl", buf.Bytes(), format.Canonical)
			if len(back) != len(orig) {
				t.Fatalf("%d Storylines back, want %d", len(back), len(orig))
			}
			// Counted by hand (jq): the Codex rollout has 118 function_call
			// items, each with its function_call_output.
			if strings.Contains(rel, "codex-rollout") {
				if s := shapeOf(back[0]); s.ToolCalls != 118 || s.Linked != 118 {
					t.Errorf("codex rollout back with %d calls, %d linked; want 118, 118", s.ToolCalls, s.Linked)
				}
			}
			for i := range orig {
				if got, want := shapeOf(back[i]), shapeOf(orig[i]); got != want {
					t.Errorf("Storyline %d (%s):\n got %+v\nwant %+v", i, orig[i].Run.SessionID, got, want)
				}
			}
		})
	}
}

func TestRoundTripATIF(t *testing.T) {
	root, files := sampleFiles(t, "atif", "openai")
	for _, rel := range files {
		t.Run(rel, func(t *testing.T) {
			for i, sl := range normalizeFile(t, root, rel) {
				doc, err := ATIFDocument(sl)
				if err != nil {
					t.Fatal(err)
				}
				back := renormalize(t, fmt.Sprintf("doc-%d.json", i), doc, format.ATIF)
				if len(back) != 1 {
					t.Fatalf("Storyline %d: %d Storylines back", i, len(back))
				}
				got, want := shapeOf(back[0]), shapeOf(sl)
				if !strings.HasPrefix(rel, "atif/") {
					// Tool-result steps fold into observations.
					got, want = linkage(got), linkage(want)
				}
				if got != want {
					t.Errorf("Storyline %d (%s):\n got %+v\nwant %+v", i, sl.Run.SessionID, got, want)
				}
				if back[0].Run.SessionID != sl.Run.SessionID {
					t.Errorf("session %q back as %q", sl.Run.SessionID, back[0].Run.SessionID)
				}
			}
		})
	}
}

func TestRoundTripOpenAI(t *testing.T) {
	root, files := sampleFiles(t, "atif", "openai")
	for _, rel := range files {
		t.Run(rel, func(t *testing.T) {
			orig := normalizeFile(t, root, rel)
			var buf bytes.Buffer
			w, _ := New(OpenAI, &buf, "")
			for _, sl := range orig {
				if err := w.Write("ds", sl); err != nil {
					t.Fatal(err)
				}
			}
			w.Close()
			back := renormalize(t, "export.jsonl", buf.Bytes(), format.OpenAI)
			if len(back) != len(orig) {
				t.Fatalf("%d Storylines back, want %d", len(back), len(orig))
			}
			for i := range orig {
				// Chat Completions tool messages carry no error status.
				want := linkage(shapeOf(orig[i]))
				want.Calls = strings.ReplaceAll(want.Calls, ":"+model.ResultError+":", ":"+model.ResultOK+":")
				if got := linkage(shapeOf(back[i])); got != want {
					t.Errorf("Storyline %d (%s):\n got %+v\nwant %+v", i, orig[i].Run.SessionID, got, want)
				}
			}
		})
	}
}

func TestExportDeterministic(t *testing.T) {
	root, files := sampleFiles(t, "atif", "openai")
	var all []*model.Storyline
	for _, rel := range files {
		all = append(all, normalizeFile(t, root, rel)...)
	}
	for _, f := range Formats {
		var outs [2]bytes.Buffer
		for i := range outs {
			w, err := New(f, &outs[i], "")
			if err != nil {
				t.Fatal(err)
			}
			for _, sl := range all {
				if err := w.Write("ds", sl); err != nil {
					t.Fatal(err)
				}
			}
			w.Close()
		}
		if !bytes.Equal(outs[0].Bytes(), outs[1].Bytes()) || outs[0].Len() == 0 {
			t.Errorf("%s: two exports differ (or are empty)", f)
		}
		if n := bytes.Count(outs[0].Bytes(), []byte("\n")); f != Canonical && n != len(all) {
			t.Errorf("%s: %d lines for %d Storylines", f, n, len(all))
		}
	}
}

func TestATIFDirOneFilePerStoryline(t *testing.T) {
	root, files := sampleFiles(t, "atif")
	dir := t.TempDir()
	w, err := New(ATIF, nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, rel := range files {
		for _, sl := range normalizeFile(t, root, rel) {
			if err := w.Write("ds", sl); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	w.Close()
	entries, _ := os.ReadDir(dir)
	if len(entries) != n {
		t.Fatalf("%d files for %d Storylines", len(entries), n)
	}
	if _, err := New(Canonical, nil, dir); err == nil {
		t.Error("canonical export to a directory accepted")
	}
	if _, err := New("parquet", nil, ""); err == nil {
		t.Error("unknown format accepted")
	}
}

// Two Storylines with one session_id (a continuation segment keeps its
// run's id) stay separate sessions in one canonical stream.
func TestCanonicalRepeatedSession(t *testing.T) {
	sl := &model.Storyline{Run: model.Run{RunID: "r", SessionID: "s", SourceFormat: "test"},
		Steps: []model.Step{{StepID: "1", Source: model.SourceUser, MessageKind: "text", MessageValue: model.Str("hi")}}}
	sl.Finalize("a.json")
	var buf bytes.Buffer
	w, _ := New(Canonical, &buf, "")
	w.Write("ds", sl)
	w.Write("ds", sl)
	w.Close()
	back := renormalize(t, "x.jsonl", buf.Bytes(), format.Canonical)
	if len(back) != 2 || back[0].Run.SessionID != "s" || back[1].Run.SessionID != "s#2" {
		t.Fatalf("sessions back: %d", len(back))
	}
	if !strings.Contains(model.Deref(back[1].Run.Extra), `"session_id":"s"`) {
		t.Errorf("original identity not kept: %s", model.Deref(back[1].Run.Extra))
	}
}
