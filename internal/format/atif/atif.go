// Package atif reads the Agent Trajectory Interchange Format (ATIF v1.0–v1.8):
// single JSON documents (trajectory.json) with their embedded subagent
// trajectories, and the ATIF-as-JSONL streaming layout (a header line followed
// by one step per line). The field mapping is documented in docs/formats.md (atif section).
package atif

import (
	"context"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/pchronicle/pchronicle/internal/format"
)

// Layouts recognized by Detect.
const (
	LayoutJSON  = "json"  // one ATIF document
	LayoutJSONL = "jsonl" // header line + one step per line, or one document per line
)

// knownMinor is the highest 1.x minor version this adapter knows.
const knownMinor = 8

// New returns the ATIF adapter.
func New() format.Adapter { return adapter{} }

type adapter struct{}

func (adapter) Name() string { return format.ATIF }

// Detect claims a JSON object that is an ATIF document, or JSON Lines whose
// first line is an ATIF-JSONL header or an ATIF document.
func (adapter) Detect(p *format.Probe) (string, bool) {
	switch p.Shape {
	case format.ShapeObject:
		if isHeader(p.First) {
			return LayoutJSONL, true // a stream that so far holds only its header
		}
		if isDocument(p.First) {
			return LayoutJSON, true
		}
	case format.ShapeLines:
		if isHeader(p.First) || isDocument(p.First) {
			return LayoutJSONL, true
		}
	}
	return "", false
}

func isHeader(o *format.Obj) bool {
	return o.Has("__header__") && o.Has("schema_version")
}

// isDocument accepts an explicit "ATIF-v…" label alone; a bare "1.4" label
// or no label at all needs the ATIF structure (agent object, steps array) too,
// so that other formats with a version field are not claimed.
func isDocument(o *format.Obj) bool {
	if o == nil {
		return false
	}
	if v := o.Str("schema_version"); v != "" {
		if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(v)), "ATIF") {
			return true
		}
		if _, ok := parseVersion(v); ok && (o.Has("steps") || o.Has("agent")) {
			return true
		}
	}
	return startsWith(o, "agent", '{') && startsWith(o, "steps", '[')
}

// startsWith reports whether k's value (possibly cut off by the probe) starts
// with the given JSON delimiter; a key whose value was not reached counts.
func startsWith(o *format.Obj, k string, delim byte) bool {
	if !o.Has(k) {
		return false
	}
	raw, ok := o.Values[k]
	if !ok || len(raw) == 0 {
		return true
	}
	return raw[0] == delim
}

// Normalize reads one file of the given layout and emits its Storylines.
func (adapter) Normalize(ctx context.Context, r io.Reader, src format.Source, layout string, emit format.Emit) error {
	switch layout {
	case LayoutJSON:
		return normalizeDocument(ctx, r, src, emit)
	case LayoutJSONL:
		return normalizeLines(ctx, r, src, emit)
	}
	return format.Errorf(src, 0, "", "atif: unknown layout %q", layout)
}

var versionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)^\s*(?:atif[-_ ]?)?v?(\d{1,4})\.(\d{1,4})\s*$`) })

// parseVersion normalizes "ATIF-v1.5", "1.5" and "v1.5" to "1.5".
func parseVersion(s string) (string, bool) {
	m := versionRE().FindStringSubmatch(s)
	if m == nil {
		return "", false
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return strconv.Itoa(major) + "." + strconv.Itoa(minor), true
}

// knownVersion reports whether v (normalized) is one of ATIF 1.0–1.8.
func knownVersion(v string) bool {
	major, minor, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(minor)
	return major == "1" && err == nil && n <= knownMinor
}
