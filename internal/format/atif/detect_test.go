package atif

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
)

func TestDetect(t *testing.T) {
	tests := []struct {
		name, file, data string
		truncated        bool
		layout           string // "" = not claimed
	}{
		{name: "prefixed version", file: "t.json", data: `{"schema_version":"ATIF-v1.5","session_id":"s"}`, layout: LayoutJSON},
		{name: "bare version with steps", file: "t.json", data: `{"schema_version":"1.4","steps":[]}`, layout: LayoutJSON},
		{name: "v-prefixed version with agent", file: "t.json", data: `{"schema_version":"v1.6","agent":{}}`, layout: LayoutJSON},
		{name: "no version, agent and steps", file: "t.json", data: `{"agent":{"name":"a"},"steps":[{"step_id":1}]}`, layout: LayoutJSON},
		{name: "cut off inside steps", file: "t.json", data: `{"schema_version":"ATIF-v1.7","agent":{"name":"a"},"steps":[{"step_id":1,"mess`, truncated: true, layout: LayoutJSON},
		{name: "jsonl header", file: "t.atif.jsonl", data: "{\"__header__\":true,\"schema_version\":\"ATIF-v1.4\"}\n{\"step_id\":1}\n", layout: LayoutJSONL},
		{name: "jsonl header only", file: "t.json", data: `{"__header__":true,"schema_version":"ATIF-v1.4"}`, layout: LayoutJSONL},
		{name: "jsonl of documents", file: "t.jsonl", data: "{\"schema_version\":\"ATIF-v1.2\",\"agent\":{},\"steps\":[]}\n{\"schema_version\":\"ATIF-v1.2\",\"agent\":{},\"steps\":[]}\n", layout: LayoutJSONL},

		{name: "bare version alone", file: "t.json", data: `{"schema_version":"1.4","messages":[]}`},
		{name: "agent is a string", file: "t.json", data: `{"agent":"swe","steps":[]}`},
		{name: "openai messages", file: "t.json", data: `{"messages":[{"role":"user","content":"hi"}]}`},
		{name: "harbor traces row", file: "t.json", data: `{"conversations":[],"agent":"terminus-2","model":"m"}`},
		{name: "codex rollout", file: "r.jsonl", data: "{\"type\":\"session_meta\",\"payload\":{}}\n{\"type\":\"response_item\",\"payload\":{}}\n"},
		{name: "atof", file: "a.jsonl", data: "{\"atof_version\":\"0.1\",\"kind\":\"scope\"}\n{\"kind\":\"mark\"}\n"},
		{name: "jsonl step without header", file: "t.jsonl", data: "{\"step_id\":1,\"source\":\"user\"}\n{\"step_id\":2}\n"},
		{name: "array", file: "t.json", data: `[{"schema_version":"ATIF-v1.5"}]`},
		{name: "not json", file: "t.json", data: `hello`},
		{name: "empty", file: "t.json", data: ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			layout, ok := New().Detect(format.NewProbe(tt.file, []byte(tt.data), tt.truncated))
			if ok != (tt.layout != "") || layout != tt.layout {
				t.Errorf("Detect = %q, %v; want %q", layout, ok, tt.layout)
			}
		})
	}
}

// TestDetectOtherSamples checks that the other formats' real samples are not
// claimed.
func TestDetectOtherSamples(t *testing.T) {
	root := filepath.Dir(samplesDir(t))
	for _, sub := range []string{"openai", "actf_candidates"} {
		files, err := filepath.Glob(filepath.Join(root, sub, "*"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			probe := readProbe(t, f)
			if layout, ok := New().Detect(probe); ok {
				t.Errorf("%s: claimed as ATIF %s", f, layout)
			}
		}
	}
}

func readProbe(t *testing.T, path string) *format.Probe {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	p, err := format.ReadProbe(fh, filepath.Base(path), format.DefaultMaxDetectionBytes)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in, want string
		known    bool
	}{
		{"ATIF-v1.5", "1.5", true},
		{"1.4", "1.4", true},
		{"v1.6", "1.6", true},
		{"atif-v1.08", "1.8", true},
		{"ATIF-v1.9", "1.9", false},
		{"2.0", "2.0", false},
		{"ATIF", "", false},
		{"1", "", false},
	}
	for _, tt := range tests {
		got, ok := parseVersion(tt.in)
		if got != tt.want || ok != (tt.want != "") || (ok && knownVersion(got) != tt.known) {
			t.Errorf("parseVersion(%q) = %q, %v (known %v); want %q (known %v)", tt.in, got, ok, knownVersion(got), tt.want, tt.known)
		}
	}
}
