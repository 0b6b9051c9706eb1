package atif

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

var fuzzSeeds = []string{
	`{"schema_version":"ATIF-v1.7","session_id":"s","agent":{},"steps":[{"step_id":1,"source":"agent","tool_calls":[{"tool_call_id":"a"}],"observation":{"results":[{"source_call_id":"a"},{"content":null}]}}],"subagent_trajectories":[{"trajectory_id":"t","steps":[]}]}`,
	`{"schema_version":"1.4","agent":{"model":"m"},"steps":[{"source":"system","message":"Tool result for x","observation":{"type":"tool_result","content":"c","result":{"success":false}}},{"source":"agent","tool_calls":[{"id":"x","name":"n","arguments":"{}"}]}]}`,
	"{\"__header__\":true,\"schema_version\":\"ATIF-v1.4\",\"session_id\":\"s\"}\n{\"step_id\":1,\"observation\":{\"results\":[{\"source_call_id\":\"z\",\"subagent_trajectory_ref\":[{\"session_id\":\"q\"}]}]}}\n{\"step_",
	`{"agent":{},"steps":[{"metrics":{"prompt_token_ids":[1,[2,"]"],{"a":"\""}],"extra":{"reasoning_tokens":"7"}},"timestamp":"nope"}]}`,
	`{"agent":{},"steps":7,"subagent_trajectories":[null,{"session_id":"s"},{"session_id":"s"}],"final_metrics":[]}`,
}

func addSeeds(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	dir := samplesDir(f)
	for _, rel := range sampleFiles {
		data, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// FuzzNormalize checks that no input panics, that failures are ParseErrors,
// and that session ids stay unique within the source.
func FuzzNormalize(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, layout := range []string{LayoutJSON, LayoutJSONL} {
			seen := map[string]bool{}
			err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: "p", File: "f"}, layout,
				func(sl *model.Storyline) error {
					if seen[sl.Run.SessionID] {
						t.Fatalf("%s: duplicate session_id %q", layout, sl.Run.SessionID)
					}
					seen[sl.Run.SessionID] = true
					if sl.Run.File != "f" || sl.Run.SourceFormat == "" {
						t.Fatalf("%s: Storyline not finalized: %+v", layout, sl.Run)
					}
					return nil
				})
			var pe *format.ParseError
			if err != nil && !errors.As(err, &pe) {
				t.Fatalf("%s: error is not a ParseError: %v", layout, err)
			}
		}
	})
}

// FuzzDetect checks that detection never panics on any prefix, and that a
// claimed file normalizes without panicking.
func FuzzDetect(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{"t.json", "t.jsonl"} {
			layout, ok := New().Detect(format.NewProbe(name, data, false))
			if !ok {
				continue
			}
			err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{File: name}, layout,
				func(*model.Storyline) error { return nil })
			var pe *format.ParseError
			if err != nil && !errors.As(err, &pe) {
				t.Fatalf("error is not a ParseError: %v", err)
			}
		}
	})
}

// FuzzSplit checks the in-place split of a validated document against
// decoding it (what the adapter did before): objectOf and objectsOf accept
// what decoding into an object or a list of objects accepts, with the same
// members as written, and extra writes what format.Extra writes.
func FuzzSplit(f *testing.F) {
	addSeeds(f)
	f.Add([]byte(`[null, {"a":null, "b" : [1, 2] ,"\u0061":2}, {"c":{ "d" : "\u00e9\"" }}]`))
	f.Add([]byte(`{"k":"v","k":{"x":[]},"\u00e9":"\ud800","\xff":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !jsonx.Valid(data) {
			return
		}
		var want object
		wantOK := jsonx.Unmarshal(data, &want) == nil
		got, ok := objectOf(data)
		if ok != wantOK || !sameObject(got, want) {
			t.Fatalf("objectOf(%s) = %q, %v; decoding gives %q, %v", data, got, ok, want, wantOK)
		}
		if ok {
			if g, w := extra(got), format.Extra(want); (g == nil) != (w == nil) || g != nil && *g != *w {
				t.Fatalf("extra(%s) = %v, format.Extra %v", data, deref(g), deref(w))
			}
		}
		var wantList []object
		wantOK = jsonx.Unmarshal(data, &wantList) == nil
		gotList, ok := objectsOf(data)
		if ok != wantOK || len(gotList) != len(wantList) {
			t.Fatalf("objectsOf(%s) = %d elements, %v; decoding gives %d, %v", data, len(gotList), ok, len(wantList), wantOK)
		}
		for i := range gotList {
			if !sameObject(gotList[i], wantList[i]) {
				t.Fatalf("objectsOf(%s)[%d] = %q; decoding gives %q", data, i, gotList[i], wantList[i])
			}
		}
	})
}

// sameObject compares members as written (nil and empty alike, as the
// adapter reads them).
func sameObject(a, b object) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if w, ok := a[k]; !ok || !bytes.Equal(w, v) {
			return false
		}
	}
	return true
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
