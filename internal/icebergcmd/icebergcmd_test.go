package icebergcmd

import (
	"strings"
	"testing"
)

func TestParseDest(t *testing.T) {
	for in, want := range map[string]string{
		"iceberg:/lake/catalog.db":        "/lake/catalog.db",
		"iceberg:https://cat.example/api": "https://cat.example/api",
		"/store":                          "",
		"s3://bucket/iceberg:/x":          "",
	} {
		got, ok := ParseDest(in)
		if ok != (want != "") || got != want {
			t.Errorf("ParseDest(%q) = %q, %v", in, got, ok)
		}
	}
}

// Without the helper beside the executable or on $PATH, an Iceberg import
// says which binary to build instead of failing obscurely.
func TestMissingHelperIsNamed(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Call(t.Context(), Request{Op: OpPending})
	if err == nil || !strings.Contains(err.Error(), "go build ./cmd/pchronicle-iceberg") {
		t.Fatalf("Call without a helper: %v", err)
	}
}
