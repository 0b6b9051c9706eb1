package testutil

import (
	"archive/zip"
	"bytes"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/pchronicle/pchronicle/internal/model"
)

// ZipEntry is one entry of a test zip. Body is the entry's content; Raw,
// when set, is how it is stored (Body compressed with Method), else Body is
// stored as is.
type ZipEntry struct {
	Name   string
	Method uint16
	Body   []byte
	Raw    []byte
}

// Zip writes entries in the given order with their sizes in the local
// headers, as Python's zipfile writes a seekable file (Inspect AI logs),
// so that a prefix of the archive shows the first entries' names.
func Zip(t testing.TB, entries ...ZipEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		raw := e.Raw
		if raw == nil {
			raw = e.Body
		}
		w, err := zw.CreateRaw(&zip.FileHeader{Name: e.Name, Method: e.Method, CRC32: crc32.ChecksumIEEE(e.Body),
			CompressedSize64: uint64(len(raw)), UncompressedSize64: uint64(len(e.Body))})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(raw)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// CheckIdentity reports a break of the identity rules every emitted
// Storyline keeps (fuzz targets check it): a run and session id, and step
// ids unique within the Storyline.
func CheckIdentity(sl *model.Storyline) error {
	if sl.Run.SessionID == "" || sl.Run.RunID == "" {
		return fmt.Errorf("empty identity: %+v", sl.Run)
	}
	seen := make(map[string]bool, len(sl.Steps))
	for _, st := range sl.Steps {
		if seen[st.StepID] {
			return fmt.Errorf("repeated step id %q", st.StepID)
		}
		seen[st.StepID] = true
	}
	return nil
}
