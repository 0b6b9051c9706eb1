package storyline

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// FuzzDecodeManifest: a generation manifest read from a bucket or a disk is
// untrusted. Decoding never panics, and a manifest it accepts encodes to
// bytes that decode to the same manifest (nothing accepted is lost or
// reinterpreted on the way through a mirror).
func FuzzDecodeManifest(f *testing.F) {
	s, err := Prepare(filepath.Join(f.TempDir(), "store"))
	if err != nil {
		f.Fatal(err)
	}
	w, err := s.NewGeneration()
	if err != nil {
		f.Fatal(err)
	}
	if err := w.Add(genStoryline("a.json", "s1", 3)); err != nil {
		f.Fatal(err)
	}
	w.AddSource(SourceInfo{File: "a.json", Bytes: 10, Storylines: 1})
	g, err := w.Commit(context.Background(), &Lineage{EventsURI: "file:///x/events.lance", EventsRevision: 2})
	if err != nil {
		f.Fatal(err)
	}
	real, err := os.ReadFile(filepath.Join(g.Dir, ManifestFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(real)
	f.Add(testutil.Replace(f, real, `"runs.parquet"`, `"../runs.parquet"`))
	f.Add(testutil.Replace(f, real, fmt.Sprintf(`"schema_version": %d`, model.SchemaVersion), `"schema_version": 99`))
	f.Add(testutil.Replace(f, real, fmt.Sprintf(`"format_version": %d`, FormatVersion), `"format_version": 1`))
	f.Add([]byte(`{"schema_version": 3, "format_version": 2, "generation": 0, "created_at": "2026-01-01T00:00:00Z", "tables": {}, "renamed_sessions": [{"_file_": "a", "session_id": "s", "stored_as": "s"}]}`))
	f.Add(append(append([]byte(nil), real...), []byte(`{}`)...))
	f.Add([]byte(`{"generation": -1}`))
	f.Add([]byte(`{"unknown": 1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeManifest(data)
		if err != nil {
			return
		}
		enc, err := m.encode()
		if err != nil {
			t.Fatalf("an accepted manifest does not encode: %v", err)
		}
		m2, err := decodeManifest(enc)
		if err != nil {
			t.Fatalf("an accepted manifest encodes to one that is rejected: %v\n%s", err, enc)
		}
		enc2, err := m2.encode()
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("decode(encode(m)) differs from m:\n%s\n%s", enc, enc2)
		}
	})
}
