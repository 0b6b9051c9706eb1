package inspect

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// entry is one zip entry of a test log.
type entry struct {
	name, body string
	method     uint16 // zip.Store, zip.Deflate or zstdMethod
}

// buildZip writes a test log's entries in the given order (see testutil.Zip).
func buildZip(t testing.TB, entries ...entry) []byte {
	t.Helper()
	zes := make([]testutil.ZipEntry, len(entries))
	for i, e := range entries {
		zes[i] = testutil.ZipEntry{Name: e.name, Method: e.method, Body: []byte(e.body), Raw: compress(t, e.method, []byte(e.body))}
	}
	return testutil.Zip(t, zes...)
}

func compress(t testing.TB, method uint16, body []byte) []byte {
	var out bytes.Buffer
	var w io.WriteCloser
	switch method {
	case zip.Store:
		return body
	case zip.Deflate:
		fw, err := flate.NewWriter(&out, flate.DefaultCompression)
		if err != nil {
			t.Fatal(err)
		}
		w = fw
	case zstdMethod:
		zw, err := zstd.NewWriter(&out)
		if err != nil {
			t.Fatal(err)
		}
		w = zw
	default: // an unsupported method: the bytes as they are
		return body
	}
	w.Write(body)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// run normalizes data with the given layout, as ingest would after
// detection, and returns the Storylines or the error.
func run(t testing.TB, name string, data []byte, layout string) ([]*model.Storyline, error) {
	t.Helper()
	var sls []*model.Storyline
	err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: name, File: name}, layout,
		func(sl *model.Storyline) error { sls = append(sls, sl); return nil })
	return sls, err
}

func mustRun(t testing.TB, name string, data []byte, layout string) []*model.Storyline {
	t.Helper()
	sls, err := run(t, name, data, layout)
	if err != nil {
		t.Fatal(err)
	}
	return sls
}

// warnings joins a Storyline's warnings, one per line.
func warnings(sl *model.Storyline) string {
	var b bytes.Buffer
	for _, w := range sl.Warnings {
		b.WriteString(w.String())
		b.WriteByte('\n')
	}
	return b.String()
}

func mustMarshal(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
