package inspect_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/ingest"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// TestZipsThroughIngest: among all adapters, only Inspect claims a zip,
// and a zip that is not an Inspect log is unrecognized with a reason that
// names what was seen, never read as bad JSON.
func TestZipsThroughIngest(t *testing.T) {
	data := testutil.Zip(t, testutil.ZipEntry{Name: "readme.txt", Body: []byte("hello")})
	dir := t.TempDir()
	path := filepath.Join(dir, "bundle.json")
	os.WriteFile(path, data, 0o644)
	_, err := ingest.NormalizeFile(context.Background(), path, "bundle.json", ingest.Options{}, func(*model.Storyline) error { return nil })
	var ue *format.UnrecognizedError
	if !errors.As(err, &ue) || !strings.Contains(ue.Reason, "a zip archive with entries [readme.txt] is not an Inspect AI eval log") {
		t.Fatalf("err = %v", err)
	}
	// Named .eval, the same zip is claimed, and fails as a log.
	eval := filepath.Join(dir, "bundle.eval")
	os.WriteFile(eval, data, 0o644)
	det, err := ingest.NormalizeFile(context.Background(), eval, "bundle.eval", ingest.Options{}, func(*model.Storyline) error { return nil })
	var pe *format.ParseError
	if det.Format != format.Inspect || !errors.As(err, &pe) || !strings.Contains(err.Error(), "not an Inspect eval log") {
		t.Fatalf("detected %+v, err = %v", det, err)
	}
}
