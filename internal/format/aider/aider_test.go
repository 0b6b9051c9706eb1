package aider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

const (
	sampleAFI  = "aider_afi-core.aider.chat.history.md"
	sampleZen  = "aider_zen-mcp-server_commands-only.aider.chat.history.md"
	fixtureEdg = "edge.aider.chat.history.md"
)

func sample(t testing.TB, name string) []byte { return testutil.Sample(t, "other/"+name) }

// inputs are the two public samples and a hand-made history with the
// cases they lack (cache tokens, quotes and headings inside a reply, a
// second token report, a command reported before any reply).
func inputs(t testing.TB) map[string][]byte {
	return map[string][]byte{sampleAFI: sample(t, sampleAFI), sampleZen: sample(t, sampleZen), fixtureEdg: testutil.Fixture(t, fixtureEdg)}
}

func TestGolden(t *testing.T) {
	for name, data := range inputs(t) {
		t.Run(name, func(t *testing.T) { testutil.GoldenInput(t, New(), name, data) })
	}
}

// TestSampleFigures: counted with a python script over the raw lines
// (sections at "# aider chat started at"; user inputs are runs of "####"
// lines ending in two spaces; "> Applied edit to" and "> Running" lines;
// "> Tokens: N sent, M received. Cost: $C message" with k = ×1000).
func TestSampleFigures(t *testing.T) {
	type figures struct {
		session              string
		users, edits, shells int
		prompt, completion   int64 // -1 = NULL
		cost                 float64
		version, model       string
	}
	tests := map[string][]figures{
		sampleAFI: {
			{"2025-07-15 11:38:37", 1, 0, 0, 3200, 21, 0.0082, "0.85.1", "gpt-4o"},
			{"2025-07-15 14:53:34", 2, 2, 2, 9800, 329, 0.0275, "0.85.1", "gpt-4o"},
			{"2025-07-15 15:06:38", 1, 0, 0, 3200, 49, 0.0085, "0.85.1", "gpt-4o"},
			{"2025-07-15 15:18:04", 6, 0, 0, 10000, 295, 0.0278, "0.85.1", "gpt-4o"},
			{"2025-07-16 20:10:38", 0, 0, 0, -1, -1, 0, "", ""},
			{"2025-07-16 20:11:30", 25, 8, 1, 97200, 4138, 0.29, "0.85.2", "gpt-4o"},
			{"2025-07-22 17:49:27", 3, 0, 3, 13700, 553, 0.04, "0.85.2", "gpt-4o"},
			{"2025-07-23 11:25:21", 2, 0, 1, 3700, 18, 0.0093, "0.85.2", "gpt-4o"},
			{"2025-08-04 13:59:12", 9, 7, 3, 185100, 4866, 0.4, "0.85.2", "gpt-4.1"},
		},
		sampleZen: { // no replies at all: commands only
			{"2025-10-20 21:49:17", 0, 0, 0, -1, -1, 0, "", ""},
			{"2025-10-20 21:49:22", 1, 0, 0, -1, -1, 0, "0.86.1", "gemini/gemini-2.5-pro-preview-06-05"},
			{"2025-10-22 09:29:12", 0, 0, 0, -1, -1, 0, "0.86.1", "gemini/gemini-2.5-pro-preview-06-05"},
			{"2025-10-23 17:04:56", 7, 0, 0, -1, -1, 0, "0.86.1", "gemini/gemini-2.5-pro-preview-06-05"},
		},
	}
	for name, want := range tests {
		_, sls := testutil.MustNormalize(t, New(), name, sample(t, name))
		if len(sls) != len(want) {
			t.Fatalf("%s: %d sections, want %d", name, len(sls), len(want))
		}
		for i, w := range want {
			sl := sls[i]
			got := figures{session: sl.Run.SessionID, prompt: testutil.OrMinus1(sl.Run.PromptTokens), completion: testutil.OrMinus1(sl.Run.CompletionTokens),
				version: model.Deref(sl.Run.AgentVersion), model: model.Deref(sl.Run.AgentModelName)}
			if sl.Run.CostUSD != nil {
				got.cost = float64(int(*sl.Run.CostUSD*1e4+0.5)) / 1e4
			}
			for _, st := range sl.Steps {
				if st.Source == model.SourceUser {
					got.users++
				}
			}
			for _, tc := range sl.ToolCalls {
				switch {
				case tc.FunctionName == callEdit && tc.ResultStatus == model.ResultOK:
					got.edits++
				case tc.FunctionName == callShell && tc.ResultStatus == model.ResultMissing:
					got.shells++
				}
			}
			if got != w {
				t.Errorf("%s section %d:\n got %+v\nwant %+v", name, i, got, w)
			}
			if sl.Run.SourceFormat != "aider/markdown" || model.Deref(sl.Run.AgentName) != "aider" || sl.Run.StartedAt.Format("2006-01-02 15:04:05") != w.session {
				t.Errorf("%s section %d: run %+v", name, i, sl.Run)
			}
		}
	}
}

// TestEdgeCases pins the hand-made history, step by step (step ids are the
// line numbers of each block's first line).
func TestEdgeCases(t *testing.T) {
	_, sls := testutil.MustNormalize(t, New(), fixtureEdg, testutil.Fixture(t, fixtureEdg))
	if len(sls) != 1 {
		t.Fatalf("%d sections", len(sls))
	}
	sl := sls[0]
	var steps []string
	for _, st := range sl.Steps {
		steps = append(steps, st.StepID+":"+st.Source)
	}
	if got := strings.Join(steps, " "); got != "4:system 9:user 12:agent 26:tool 35:agent 37:tool 40:user 42:tool" {
		t.Errorf("steps %s", got)
	}
	reply := model.Deref(sl.Steps[2].MessageValue)
	if !strings.HasPrefix(reply, "Here is the change.\n\n> A quoted note in the reply (no trailing break)\n#### A heading in the reply\n") ||
		!strings.HasSuffix(reply, ">>>>>>> REPLACE\n```") {
		t.Errorf("reply: %q", reply)
	}
	if u := model.Deref(sl.Steps[1].MessageValue); u != "Rename foo to bar in util.py\nand explain why." {
		t.Errorf("user input: %q", u)
	}
	st := sl.Steps[2]
	if testutil.OrMinus1(st.PromptTokens) != 12000 || testutil.OrMinus1(st.CompletionTokens) != 250 || testutil.OrMinus1(st.CachedTokens) != 2100 ||
		model.Deref(st.Extra) != `{"cache_write_tokens":1300}` || st.CostUSD == nil || *st.CostUSD != 0.05 {
		t.Errorf("reply tokens: %+v extra %s", st, model.Deref(st.Extra))
	}
	type row struct{ step, name, args, status, result, resultStep string }
	want := []row{
		{"4", callShell, `{"command":"ls"}`, model.ResultMissing, "", ""},
		{"12", callEdit, `{"path":"util.py"}`, model.ResultOK, "Applied edit to util.py", "26"},
		{"12", callShell, `{"command":"pytest -q"}`, model.ResultMissing, "", ""},
	}
	if len(sl.ToolCalls) != len(want) {
		t.Fatalf("calls %+v", sl.ToolCalls)
	}
	for i, w := range want {
		tc := sl.ToolCalls[i]
		if got := (row{tc.StepID, tc.FunctionName, model.Deref(tc.Arguments), tc.ResultStatus, model.Deref(tc.Result), model.Deref(tc.ResultStepID)}); got != w {
			t.Errorf("call %d = %+v, want %+v", i, got, w)
		}
	}
	r := sl.Run
	if model.Deref(r.AgentVersion) != "0.86.2" || model.Deref(r.AgentModelName) != "anthropic/claude-sonnet-4" ||
		model.Deref(r.Extra) != `{"edit_format":"diff","weak_model":"anthropic/claude-3-5-haiku"}` ||
		testutil.OrMinus1(r.PromptTokens) != 25000 || r.ReportedCostUSD == nil || *r.ReportedCostUSD != 0.09 {
		t.Errorf("run %+v extra %s", r, model.Deref(r.Extra))
	}
	var warnings []string
	for _, w := range sl.Warnings {
		warnings = append(warnings, w.String())
	}
	wantWarnings := []string{
		fixtureEdg + ":7: shell reported before any reply; recorded on the output step",
		fixtureEdg + ":38: token report with no reply before it; kept in the output text only",
		fixtureEdg + ":2: 2 shell command(s) have no result: Aider does not write command output to the history",
	}
	if strings.Join(warnings, "\n") != strings.Join(wantWarnings, "\n") {
		t.Errorf("warnings:\n%s", strings.Join(warnings, "\n"))
	}

	// Written with Windows line endings, the same history gives the same rows.
	crlf := bytes.ReplaceAll(testutil.Fixture(t, fixtureEdg), []byte("\n"), []byte("\r\n"))
	_, again := testutil.MustNormalize(t, New(), fixtureEdg, crlf)
	a, _ := json.Marshal(again)
	b, _ := json.Marshal(sls)
	if !bytes.Equal(a, b) {
		t.Error("CRLF line endings change the rows")
	}
}

func TestDetect(t *testing.T) {
	history := "\n# aider chat started at 2025-01-01 10:00:00\n\n> Aider v0.80.0  \n"
	tests := []struct {
		name, data string
		ok         bool
	}{
		{".aider.chat.history.md", history, true},
		{"proj/.Aider.Chat.History.MD", history, true},
		{"notes.md", history, false},                                // by that name only
		{".aider.chat.history.md", "# My notes\n" + history, false}, // the header comes first
		{".aider.input.history", history, false},
	}
	for _, tt := range tests {
		if _, ok := New().Detect(format.NewProbe(tt.name, []byte(tt.data), false)); ok != tt.ok {
			t.Errorf("%s %.20q: detected %v, want %v", tt.name, tt.data, ok, tt.ok)
		}
	}
}

// TestBadHeaderTime: a section header whose time does not parse still
// opens a section, named as written, with a warning naming the line.
func TestBadHeaderTime(t *testing.T) {
	var sls []*model.Storyline
	err := New().Normalize(context.Background(), strings.NewReader("# aider chat started at sometime\n\n#### hi  \n"),
		format.Source{Path: "repo/.aider.chat.history.md", File: "h"}, Layout, func(sl *model.Storyline) error { sls = append(sls, sl); return nil })
	if err != nil || len(sls) != 1 {
		t.Fatalf("%v, %d", err, len(sls))
	}
	sl := sls[0]
	if sl.Run.SessionID != "sometime" || sl.Run.StartedAt != nil || len(sl.Warnings) != 1 ||
		sl.Warnings[0].String() != `h:1: section start time "sometime" is not a timestamp` {
		t.Errorf("run %+v warnings %v", sl.Run, sl.Warnings)
	}
}

// FuzzNormalize: any text normalizes without panicking or failing, into
// Storylines that keep testutil.CheckStoryline's invariants.
func FuzzNormalize(f *testing.F) {
	for _, data := range inputs(f) {
		if len(data) > 16<<10 {
			data = data[:16<<10]
		}
		f.Add(data)
	}
	f.Add([]byte("> Running x  \n#### y  \nz\n> Tokens: 1k sent, 2 received.  \n> Applied edit to a  \n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: "f", File: "f"}, Layout,
			func(sl *model.Storyline) error { return testutil.CheckStoryline(sl) })
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	})
}
