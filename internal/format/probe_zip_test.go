package format_test

import (
	"archive/zip"
	"bytes"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// TestProbeZip: a zip is recognized by its signature, never read as JSON,
// and the names of the entries whose local headers fit in the prefix are
// listed (what the Inspect adapter detects .eval logs by).
func TestProbeZip(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range []string{"_journal/start.json", "samples/1_epoch_1.json", "header.json"} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(`{"version":2}`))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	// archive/zip streams entries with a data descriptor: their sizes come
	// after the data, so the walk stops after the first name.
	if p := format.NewProbe("log.eval", buf.Bytes(), false); p.Shape != format.ShapeZip || strings.Join(p.ZipNames, ",") != "_journal/start.json" || p.First != nil {
		t.Errorf("streamed zip: shape %v names %q", p.Shape, p.ZipNames)
	}
	stored := testutil.Zip(t, testutil.ZipEntry{Name: "a.json", Body: []byte("{}")}, testutil.ZipEntry{Name: "b/c.json", Body: []byte("[1]")})
	if p := format.NewProbe("x.zip", stored, false); p.Shape != format.ShapeZip || strings.Join(p.ZipNames, ",") != "a.json,b/c.json" {
		t.Errorf("stored zip: shape %v names %q", p.Shape, p.ZipNames)
	}
	// A prefix cut inside the second header keeps the first name.
	if p := format.NewProbe("x.zip", stored[:40], true); p.Shape != format.ShapeZip || strings.Join(p.ZipNames, ",") != "a.json" {
		t.Errorf("cut zip: names %q", p.ZipNames)
	}
	if p := format.NewProbe("empty.zip", []byte("PK\x05\x06"+strings.Repeat("\x00", 18)), false); p.Shape != format.ShapeZip || len(p.ZipNames) != 0 {
		t.Errorf("empty zip: shape %v names %q", p.Shape, p.ZipNames)
	}
	if p := format.NewProbe("pk.json", []byte("PK is not a zip"), false); p.Shape != format.ShapeUnknown {
		t.Errorf("text starting with PK: shape %v", p.Shape)
	}
}
