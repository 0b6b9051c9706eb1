package openhands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// conversationSamples are the persisted conversations of
// ../shared/samples/openhands-v1, each a directory.
var conversationSamples = []string{
	"conversations/v1_11_5_cli_default",
	"local_plugin_install_test/persistence/00000000000000000000000000000203",
	"test_file_store",
	"workdir_layout/.openhands",
}

// readConversation normalizes the conversation directory dir as the
// catalog does: base_state.json, then the event files in name order.
func readConversation(t testing.TB, dir, file string) (*model.Storyline, error) {
	t.Helper()
	base, err := os.ReadFile(filepath.Join(dir, "base_state.json"))
	if err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "events", "event-*.json"))
	sort.Strings(names)
	var files []EventFile
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, EventFile{Name: filepath.Base(n), Data: data})
	}
	var sls []*model.Storyline
	err = NormalizeConversation(context.Background(), format.Source{Path: file, File: file}, base, events(files),
		func(sl *model.Storyline) error { sls = append(sls, sl); return nil })
	if err != nil {
		return nil, err
	}
	if len(sls) != 1 {
		t.Fatalf("%d Storylines", len(sls))
	}
	return sls[0], nil
}

func events(files []EventFile) func() (EventFile, bool, error) {
	return func() (EventFile, bool, error) {
		if len(files) == 0 {
			return EventFile{}, false, nil
		}
		f := files[0]
		files = files[1:]
		return f, true, nil
	}
}

func TestConversationGolden(t *testing.T) {
	for _, rel := range conversationSamples {
		t.Run(rel, func(t *testing.T) {
			sl, err := readConversation(t, filepath.Join(testutil.SamplesDir(t), "openhands-v1", rel), rel)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent([]testutil.GoldenStoryline{testutil.NewGoldenStoryline(sl)}, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, filepath.Join("testdata", "golden", "conversation_"+strings.ReplaceAll(rel, "/", "_")+".golden.json"), got)
		})
	}
}

// TestConversationFigures: counted by hand from the sample directories.
// local_plugin_install_test: 3 event files (SystemPromptEvent, the user's
// "hello", the agent's "Done"), execution_status finished, model
// test-model. test_file_store: 1 SystemPromptEvent, the older state schema
// (agent_status paused, stats.service_to_metrics of gpt-4 with 0 tokens).
// v1_11_5_cli_default: no events/ at all, execution_status idle. An empty
// usage_to_metrics leaves the reported totals unknown (NULL), not 0.
func TestConversationFigures(t *testing.T) {
	root := filepath.Join(testutil.SamplesDir(t), "openhands-v1")
	tests := []struct {
		rel, session, model, status string
		steps                       int64
		reportedPrompt              int64
	}{
		{conversationSamples[0], "11111111-2222-3333-4444-555555555555", "gpt-4o-mini", model.StatusUnknown, 0, -1},
		{conversationSamples[1], "00000000-0000-0000-0000-000000000203", "test-model", model.StatusCompleted, 3, -1},
		{conversationSamples[2], "1da91efa-2192-41f2-b5f9-541a5ccc7feb", "gpt-4", model.StatusCancelled, 1, 0},
		{conversationSamples[3], "c81a0af3-dc58-4626-940e-fdcbf7fd88e4", "gpt-4o-mini", model.StatusUnknown, 1, -1},
	}
	for _, tt := range tests {
		sl, err := readConversation(t, filepath.Join(root, tt.rel), tt.rel)
		if err != nil {
			t.Fatal(err)
		}
		r := sl.Run
		if r.SessionID != tt.session || model.Deref(r.AgentModelName) != tt.model || r.Status != tt.status || r.StepCount != tt.steps ||
			r.ToolCallCount != 0 || r.SourceFormat != "openhands/conversation" || testutil.OrMinus1(r.ReportedPromptTokens) != tt.reportedPrompt {
			t.Errorf("%s: %+v", tt.rel, r)
		}
		if strings.Contains(model.Deref(r.Extra), "api_key") || strings.Contains(model.Deref(r.Extra), "**********") {
			t.Errorf("%s: the LLM's credentials reached extra: %s", tt.rel, model.Deref(r.Extra))
		}
	}
}

// TestConversationWarnsAndRefuses: an event file that is not a JSON object
// is skipped with a warning naming it; a base_state.json that is not a
// conversation state is refused with a ParseError.
func TestConversationWarnsAndRefuses(t *testing.T) {
	base := []byte(`{"id":"c","agent":{"llm":{"model":"m"}}}`)
	msg := `{"id":"e1","timestamp":"2026-01-01T00:00:00","source":"user","llm_message":{"role":"user","content":[{"type":"text","text":"hi"}]},"kind":"MessageEvent"}`
	var sls []*model.Storyline
	err := NormalizeConversation(context.Background(), format.Source{Path: "c", File: "c"}, base,
		events([]EventFile{{"event-00000-a.json", []byte(msg)}, {"event-00001-b.json", []byte("[1]")}}),
		func(sl *model.Storyline) error { sls = append(sls, sl); return nil })
	if err != nil || len(sls) != 1 || sls[0].Run.StepCount != 1 || len(sls[0].Warnings) != 1 ||
		sls[0].Warnings[0].String() != "c#/events/event-00001-b.json: event file is not a JSON object; skipped" {
		t.Fatalf("err %v, %+v", err, sls)
	}
	for _, bad := range []string{`{"id":"c"}`, `{"level":3}`, `[]`, `{oops`} {
		err := NormalizeConversation(context.Background(), format.Source{Path: "c", File: "c"}, []byte(bad), events(nil),
			func(*model.Storyline) error { t.Fatal("emitted"); return nil })
		var pe *format.ParseError
		if !errors.As(err, &pe) || IsConversationState([]byte(bad)) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// FuzzNormalizeConversation: any state and events either give a
// Storyline that keeps testutil.CheckStoryline's invariants or a
// ParseError for the state, and never panic.
func FuzzNormalizeConversation(f *testing.F) {
	root := filepath.Join(testutil.SamplesDir(f), "openhands-v1", conversationSamples[1])
	base, _ := os.ReadFile(filepath.Join(root, "base_state.json"))
	names, _ := filepath.Glob(filepath.Join(root, "events", "*.json"))
	sort.Strings(names)
	var evs [][]byte
	for _, n := range names {
		data, _ := os.ReadFile(n)
		evs = append(evs, data)
	}
	f.Add(base, bytes.Join(evs, []byte("\n")))
	f.Add([]byte(`{"id":1,"agent":{"llm":{"model":"m"}},"execution_status":7,"stats":{"service_to_metrics":[]}}`), []byte("{}\n[]\n{\"kind\":\"ActionEvent\",\"id\":\"a\",\"source\":\"agent\"}"))
	f.Add([]byte(`{"id":"x","agent":{"llm":{"model":"m","api_key":"k"}},"workspace":3,"confirmation_policy":"x"}`), sample(f, "openhands-sdk_v1_goal_events.jsonl"))
	f.Fuzz(func(t *testing.T, base, lines []byte) {
		var files []EventFile
		for _, e := range bytes.Split(lines, []byte("\n")) {
			files = append(files, EventFile{Name: "event-x.json", Data: e})
		}
		err := NormalizeConversation(context.Background(), format.Source{Path: "f", File: "f"}, base, events(files),
			func(sl *model.Storyline) error { return testutil.CheckStoryline(sl) })
		var pe *format.ParseError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("error is not a ParseError: %v", err)
		}
	})
}
