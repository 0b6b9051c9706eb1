package ingest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/format/harbor"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

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
	aider := filepath.Join(dir, "notes.aider.chat.history.md")
	os.WriteFile(aider, []byte("# My notes\n\n# aider chat started at 2025-01-01 10:00:00\n"), 0o644)
	_, err = NormalizeFile(context.Background(), aider, "n", Options{}, nil)
	if !errors.Is(err, format.ErrUnrecognized) || !strings.HasSuffix(err.Error(), `named like an Aider chat history, but it does not start with a "# aider chat started at" line`) {
		t.Errorf("Aider-named file: %v", err)
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
		_, err := NormalizeFile(context.Background(), path, rel, Options{}, collect(&whole))
		if errors.Is(err, format.ErrUnrecognized) {
			continue // not a trajectory (TestEverySampleIsDetectedExactly)
		}
		if err != nil {
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
// no sample changes its detection is TestEverySampleIsDetectedExactly.)
func TestAdapterFixturesAreDetected(t *testing.T) {
	dir := filepath.Join(testutil.RepoRoot(t), "internal", "format")
	for _, tt := range []struct{ file, format, layout string }{
		{"claudecode/testdata/session-basic.jsonl", format.ClaudeCode, "jsonl"},
		{"claudecode/testdata/session-subagents.jsonl", format.ClaudeCode, "jsonl"},
		{"claudecode/testdata/agent-a1b2c3d.jsonl", format.ClaudeCode, "jsonl"},
		{"openhands/testdata/output.jsonl", format.OpenHands, "jsonl"},
		{"openhands/testdata/trajectory-ipython.json", format.OpenHands, "json"},
		{"sweagent/testdata/mini-swe-agent-2.1_toolcall.traj.json", format.SWEAgent, "mini-swe-agent-1.1"},
		{"sweagent/testdata/mini-swe-agent-2.0_textbased_limits.traj.json", format.SWEAgent, "mini-swe-agent-1.1"},
		{"sweagent/testdata/swe-agent-1.1_retry-attempts.traj", format.SWEAgent, "traj"},
		{"geminicli/testdata/session-2026-03-01T10-00-a1b2c3d4.jsonl", format.GeminiCLI, "jsonl"},
		{"aider/testdata/edge.aider.chat.history.md", format.Aider, "markdown"},
		{"tau/testdata/tool-calling-gpt-4o-0.0_range_0-3_user-gpt-4o-llm_0101120000.json", format.TauBench, "results"},
		{"otel/testdata/genai-travel-agent.otlp.json", format.OTel, "otlp-json"},
		{"otel/testdata/openinference-agents.otlp.jsonl", format.OTel, "otlp-jsonl"},
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

// TestByteOrderMarkIsAccepted: a file that starts with a UTF-8 byte order
// mark (as editors on Windows write them) is detected and normalized exactly
// like the same file without it, in every layout shape and on both read
// paths (read once in memory, and streamed).
func TestByteOrderMarkIsAccepted(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ name, content, format string }{
		{"doc.json", `{"schema_version":"ATIF-v1.6","session_id":"s","agent":{"name":"a","version":"1"},"steps":[{"step_id":1,"source":"user","message":"hi"}]}`, format.ATIF},
		{"array.json", `[{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]}]`, format.OpenAI},
		{"lines.jsonl", `{"messages":[{"role":"user","content":"a"}]}` + "\n" + `{"messages":[{"role":"user","content":"b"}]}` + "\n", format.OpenAI},
		{"x.aider.chat.history.md", "# aider chat started at 2025-01-01 10:00:00\n\n#### hi  \n\nhello\n\n> Tokens: 10 sent, 2 received.  \n", format.Aider},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plain, withBOM := filepath.Join(dir, "plain-"+tt.name), filepath.Join(dir, "bom-"+tt.name)
			os.WriteFile(plain, []byte(tt.content), 0o644)
			os.WriteFile(withBOM, []byte(format.BOM+tt.content), 0o644)
			want := normalizedRows(t, plain, tt.name, Options{})
			// A file at least as long as the detection limit is streamed.
			for _, opts := range []Options{{}, {MaxDetectionBytes: int64(len(tt.content))}} {
				got := normalizedRows(t, withBOM, tt.name, opts)
				if got != want {
					t.Errorf("max detection bytes %d: with a BOM\n%s\nwithout\n%s", opts.MaxDetectionBytes, got, want)
				}
			}
			det, err := DetectFile(withBOM, Options{})
			if err != nil || det.Format != tt.format {
				t.Errorf("detected %+v, %v; want %s", det, err, tt.format)
			}
		})
	}
}

// normalizedRows normalizes the file at path (named file in _file_) and
// returns its Storylines as JSON, one per line.
func normalizedRows(t *testing.T, path, file string, opts Options) string {
	t.Helper()
	var out []string
	_, err := NormalizeFile(context.Background(), path, file, opts, func(sl *model.Storyline) error {
		b, err := jsonx.Marshal(sl)
		out = append(out, string(b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, "\n")
}

// TestTrialOutcomeReachesMainStorylines: a trajectory read with its
// trial's result.json as Options.Outcome gets the trial's reward, scores
// and reported totals on its main Storyline only (the trajectory's
// subagent file reference does not make a Storyline here; the Claude Code
// fixture's sidechains do), and whatever the file records itself wins.
func TestTrialOutcomeReachesMainStorylines(t *testing.T) {
	result := filepath.Join(testutil.RepoRoot(t), "internal", "format", "harbor", "testdata", "result.json")
	reads := 0
	opts := Options{Outcome: func(ctx context.Context) (*format.Outcome, error) {
		reads++
		f, err := os.Open(result)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return harbor.ReadTrialResult(f, format.Source{Path: result, File: "result.json"})
	}}
	collect := func(path string) []*model.Storyline {
		t.Helper()
		var sls []*model.Storyline
		if _, err := NormalizeFile(context.Background(), path, filepath.Base(path), opts, func(sl *model.Storyline) error {
			sls = append(sls, sl)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return sls
	}

	traj := filepath.Join(testutil.SamplesDir(t), "atif", "harbor-golden", "terminus_2_context-summarization", "trajectory.json")
	run := collect(traj)[0].Run
	if run.Reward == nil || *run.Reward != 1 || model.Deref(run.Scores) != `{"reward":1.0}` || reads != 1 {
		t.Errorf("reward %v scores %v, %d reads", run.Reward, model.Deref(run.Scores), reads)
	}
	// The trajectory's own final_metrics (7802 prompt, 1030 completion, 0
	// cached tokens, $0.029805) stay; the trial's totals differ.
	if testutil.OrMinus1(run.ReportedCompletionTokens) != 1030 || testutil.OrMinus1(run.ReportedCachedTokens) != 0 ||
		run.ReportedCostUSD == nil || *run.ReportedCostUSD != 0.029804999999999998 {
		t.Errorf("reported completion %d cached %d cost %v", testutil.OrMinus1(run.ReportedCompletionTokens), testutil.OrMinus1(run.ReportedCachedTokens), run.ReportedCostUSD)
	}
	// A trajectory without final_metrics takes the trial's.
	run = collect(filepath.Join(testutil.SamplesDir(t), "atif", "openagents_orchestrator_streaming.atif.jsonl"))[0].Run
	if testutil.OrMinus1(run.ReportedPromptTokens) != 7802 || testutil.OrMinus1(run.ReportedCachedTokens) != 1024 || run.ReportedCostUSD == nil || *run.ReportedCostUSD != 0.0227 {
		t.Errorf("no final_metrics: reported prompt %d cached %d cost %v", testutil.OrMinus1(run.ReportedPromptTokens), testutil.OrMinus1(run.ReportedCachedTokens), run.ReportedCostUSD)
	}

	reads = 0
	sls := collect(filepath.Join(testutil.RepoRoot(t), "internal", "format", "claudecode", "testdata", "session-subagents.jsonl"))
	for _, sl := range sls {
		if main := sl.Run.ParentSessionID == nil; main != (sl.Run.Reward != nil) {
			t.Errorf("%s (parent %v): reward %v", sl.Run.SessionID, sl.Run.ParentSessionID, sl.Run.Reward)
		}
	}
	if len(sls) < 2 || reads != 1 {
		t.Errorf("%d Storylines, %d reads", len(sls), reads)
	}

	// A harbor trace row's own result wins over the trial's.
	rows := collect(filepath.Join(testutil.SamplesDir(t), "openai", "harbor-golden_openhands_hello-world.hermes-tool_call.traces.json"))
	if r := rows[0].Run; r.Reward == nil || *r.Reward != 1 || model.Deref(r.Scores) != `{"reward":1}` {
		t.Errorf("trace row: reward %v scores %v", r.Reward, model.Deref(r.Scores))
	}
}

// TestUnreadableOutcome: a result.json that cannot be parsed leaves the
// trajectory readable, with a warning naming the result file and line; an
// error reading it fails the file.
func TestUnreadableOutcome(t *testing.T) {
	traj := filepath.Join(testutil.SamplesDir(t), "atif", "harbor-golden", "misc", "openhands_hello-world.trajectory.json")
	broken := Options{Outcome: func(context.Context) (*format.Outcome, error) {
		return harbor.ParseTrialResult([]byte("{\n\"verifier_result\": ,\n\"exception_info\": null}"), format.Source{Path: "trial/result.json"})
	}}
	var sl *model.Storyline
	if _, err := NormalizeFile(context.Background(), traj, "t", broken, func(s *model.Storyline) error { sl = s; return nil }); err != nil {
		t.Fatal(err)
	}
	last := sl.Warnings[len(sl.Warnings)-1].String()
	if sl.Run.Reward != nil || !strings.HasPrefix(last, "trial/result.json:2: harbor result.json: invalid JSON at column") ||
		!strings.HasSuffix(last, "; reward and scores are not set") {
		t.Errorf("reward %v, last warning %q", sl.Run.Reward, last)
	}
	gone := errors.New("pinned object changed")
	failing := Options{Outcome: func(context.Context) (*format.Outcome, error) { return nil, gone }}
	if _, err := NormalizeFile(context.Background(), traj, "t", failing, func(*model.Storyline) error { return nil }); !errors.Is(err, gone) {
		t.Errorf("err = %v", err)
	}
}

// TestRunsInPartsKeepOneIdentity: the parts of a run (model.Storyline.More)
// are one Storyline to the identity rule and to the trial's outcome — its
// parts keep the id its first got, a run that repeats an id after the
// first ended is renamed once, and only a main run's last part (its run
// row) takes the outcome.
func TestRunsInPartsKeepOneIdentity(t *testing.T) {
	part := func(id string, more bool, parent string) *model.Storyline {
		sl := &model.Storyline{Run: model.Run{SessionID: id, ParentSessionID: model.Str(parent)}, More: more,
			Steps: []model.Step{{SessionID: id}}, ToolCalls: []model.ToolCall{{SessionID: id}}}
		return sl
	}
	in := []*model.Storyline{
		part("a", true, ""), part("a/sub", true, "a"), part("a", true, ""), part("a", false, ""), part("a/sub", false, "a"),
		part("a", false, ""),                      // a second run named a
		part("a", true, ""), part("a", false, ""), // a third, in parts
	}
	want := []struct {
		id     string
		reward bool
	}{{"a", false}, {"a/sub", false}, {"a", false}, {"a", true}, {"a/sub", false}, {"a#2", true}, {"a#3", false}, {"a#3", true}}
	reads := 0
	outcome := func(context.Context) (*format.Outcome, error) {
		reads++
		r := 1.0
		return &format.Outcome{Reward: &r}, nil
	}
	var got []*model.Storyline
	src := format.Source{Path: "s.jsonl"}
	emit := uniqueSessions(src, withOutcome(context.Background(), outcome, func(sl *model.Storyline) error {
		got = append(got, sl)
		return nil
	}))
	for _, sl := range in {
		if err := emit(sl); err != nil {
			t.Fatal(err)
		}
	}
	renames := 0
	for i, sl := range got {
		if sl.Run.SessionID != want[i].id || sl.Steps[0].SessionID != want[i].id || sl.ToolCalls[0].SessionID != want[i].id {
			t.Errorf("part %d: session %q (rows %q, %q), want %q", i, sl.Run.SessionID, sl.Steps[0].SessionID, sl.ToolCalls[0].SessionID, want[i].id)
		}
		if (sl.Run.Reward != nil) != want[i].reward {
			t.Errorf("part %d (%s, more %v): reward %v", i, sl.Run.SessionID, sl.More, sl.Run.Reward)
		}
		renames += len(sl.Warnings)
	}
	if renames != 2 || reads != 1 {
		t.Errorf("%d rename warnings, want 2 (one per renamed run); outcome read %d times, want 1", renames, reads)
	}
}
