package web

import (
	"regexp"
	"testing"
)

// TestAssetsHaveNoInlineCodeOrMarkupSinks scans the embedded page: no
// inline script or style, no other origin, and no API that parses strings
// as HTML or code — trajectory text can only ever become text nodes.
func TestAssetsHaveNoInlineCodeOrMarkupSinks(t *testing.T) {
	inline := regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]|<style|\sstyle=|\son[a-z]+=`)
	if m := inline.FindString(string(current().shell)); m != "" {
		t.Errorf("index.html has inline script, style or an event handler: %q", m)
	}
	sinks := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setAttribute\(\s*['"]on|https?://`)
	for name, body := range current().files {
		if name == "index.html" {
			continue
		}
		if m := sinks.FindString(string(body)); m != "" {
			t.Errorf("%s uses %q", name, m)
		}
	}
	if len(current().files) < 10 {
		t.Fatalf("only %d embedded files", len(current().files))
	}
}
