package events

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

// FuzzDecodeManifest: _manifest.json read from a bucket or a disk is
// untrusted. Decoding never panics, an accepted manifest names only segment
// paths inside the store, and it encodes to bytes that decode to the same
// manifest.
func FuzzDecodeManifest(f *testing.F) {
	s, err := Create(filepath.Join(f.TempDir(), DirName))
	if err != nil {
		f.Fatal(err)
	}
	for i, batch := range []string{"a", "b"} { // two segments
		if _, err := s.Append(context.Background(), genEvents(batch, 2, 3, int64(3*i))); err != nil {
			f.Fatal(err)
		}
	}
	real, err := os.ReadFile(filepath.Join(s.Dir(), ManifestName))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(real)
	f.Add(testutil.Replace(f, real, `"segments/`, `"../../`))
	f.Add(testutil.Replace(f, real, `"format_version": 1`, `"format_version": 7`))
	f.Add(append(append([]byte(nil), real...), '1'))
	f.Add([]byte(`{"segments": null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeManifest(data)
		if err != nil {
			return
		}
		for _, seg := range m.Segments {
			if p := filepath.Clean(filepath.FromSlash(seg.Path)); filepath.IsAbs(p) || p == ".." || len(p) > 2 && p[:3] == ".."+string(filepath.Separator) {
				t.Fatalf("accepted segment path %q outside the store", seg.Path)
			}
		}
		enc, err := encodeManifest(m)
		if err != nil {
			t.Fatalf("an accepted manifest does not encode: %v", err)
		}
		m2, err := decodeManifest(enc)
		if err != nil {
			t.Fatalf("an accepted manifest encodes to one that is rejected: %v\n%s", err, enc)
		}
		if enc2, err := encodeManifest(m2); err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("decode(encode(m)) differs from m:\n%s\n%s", enc, enc2)
		}
	})
}
