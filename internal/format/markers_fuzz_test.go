package format

import (
	"strings"
	"testing"
)

// eachMarkerSearch is the rule textMayHoldInlineData implements, one search
// per marker.
func eachMarkerSearch(s string) bool {
	for _, m := range []string{"base64", `"data"`, `"file_data"`, `"b64_json"`} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// FuzzInlineDataMarkers: the two searches of textMayHoldInlineData find
// what the search for each marker finds.
func FuzzInlineDataMarkers(f *testing.F) {
	for _, s := range []string{`{"data":1}`, `{"file_data":1}`, `{"b64_json":1}`, `data:image/png;base64,AAAA`, `{"metadata":"64"}`,
		`"b64_json`, `b64_json"`, `base6`, `ase64`, `data"`, `"data`, `"fil_data"`, `6464"b64_json"`, `"file_"data"`, `64`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := textMayHoldInlineData(s), eachMarkerSearch(s); got != want {
			t.Fatalf("textMayHoldInlineData(%q) = %v, each marker's search %v", s, got, want)
		}
	})
}
