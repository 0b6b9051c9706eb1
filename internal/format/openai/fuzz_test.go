package openai

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// fuzzSeeds are the samples plus the hand-made inputs and small edge cases.
func fuzzSeeds(f *testing.F) [][]byte {
	seeds := [][]byte{
		[]byte(droneJSONL), []byte(chatArray), []byte(miniSWE), []byte(openAIChatExport), []byte(sweAgentTraj),
		[]byte(shareGPT), []byte(messageLines), []byte(batchInput), []byte(batchOutput), []byte(proxyLog),
		[]byte(responseObject), []byte(itemArray), []byte(legacyCodex), []byte(codexTruncated),
		[]byte(hermesJSONL), []byte(llamaFactoryParts), []byte(shareGPTCallList), []byte(harborTwoCalls),
		[]byte(`{"messages":[{"role":"assistant","content":"<tool_call><tool_call>{}</tool_call></tool_call><tools>x</tools>"}]}` + "\n"),
		[]byte(`{"messages":[{"role":"assistant","content":[],"tool_calls":{"a":1,"b":{"params":{"name":"x"}}}},{"role":"user","tool_results":{"a":[],"b":{"isError":true}},"channels":{"reasoning":7}}]}`),
		[]byte(`{"messages":null}`), []byte(`{"messages":[null,1,"x",{}]}` + "\n"), []byte(`[{"messages":{}}]`),
		[]byte(`{"messages":[{"role":"tool","tool_call_id":"x"},{"role":"assistant","tool_calls":"x"}]}` + "\n"),
		[]byte(`{"messages":[{"role":"assistant","content":"a</think>b<thinking>c"}]}` + "\n"),
		[]byte(`{"conversations":[{"from":"function_call","value":"{"}]}` + "\n"),
		[]byte(`{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":1}}}}` + "\n"),
		[]byte(`{"type":"response_item","payload":null}` + "\n"),
		[]byte(`{"object":"response","output":[{"type":"x"},{}]}`), []byte(`{"role":"user","content":[{"type":"refusal"}]}`),
	}
	dir := filepath.Join(samplesDir(f), "openai")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if data, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
			seeds = append(seeds, data)
		}
	}
	return seeds
}

// FuzzNormalize checks that any input, under every layout, either
// normalizes into consistent Storylines or fails with a ParseError, and
// never panics; and that lookupKey of it is format.String's.
func FuzzNormalize(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	layouts := []string{layoutChatJSONL, layoutChatArray, layoutShareGPT, layoutHarbor, layoutWrapped,
		layoutMessages, layoutRequestLog, layoutResponses, layoutCodex}
	f.Add([]byte(`"call_\u0041"`))
	f.Add([]byte("\"\xff\""))
	f.Add([]byte(` "x" `))
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := lookupKey(data), format.String(data); got != want {
			t.Fatalf("lookupKey %q, format.String %q", got, want)
		}
		for _, layout := range layouts {
			err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: "f", File: "f"}, layout,
				func(sl *model.Storyline) error { return testutil.CheckStoryline(sl) })
			var pe *format.ParseError
			if err != nil && !errors.As(err, &pe) {
				t.Fatalf("%s: error is not a ParseError: %v", layout, err)
			}
		}
	})
}

// FuzzDetect checks that detection never panics and that what it accepts
// can be normalized without a non-ParseError failure.
func FuzzDetect(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add("x.jsonl", s)
		f.Add("x.json", s)
	}
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		p := format.NewProbe(name, data, false)
		layout, ok := New().Detect(p)
		if !ok {
			return
		}
		err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: name, File: name}, layout,
			func(sl *model.Storyline) error { return testutil.CheckStoryline(sl) })
		var pe *format.ParseError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("%s: %v", layout, err)
		}
	})
}
