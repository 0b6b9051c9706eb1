package inspect

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/model"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// FuzzNormalize: any bytes, read as either layout, give Storylines with an
// identity and unique step ids, or a located ParseError; never a panic.
// The corpus holds the JSON samples, small zips built here (deflate, zstd,
// chunked) and the .eval test log.
func FuzzNormalize(f *testing.F) {
	for _, name := range sampleFiles {
		data := readSample(f, name)
		if len(data) > 64<<10 {
			continue // keep the corpus quick to mutate; the small samples cover both layouts
		}
		f.Add(data)
	}
	f.Add([]byte(jsonLog(mVersion, mStatus, mEval, mPlan, mSamples, mReductions)))
	f.Add([]byte(jsonLog(mSamples, mEval)))
	f.Add([]byte(`{"eval":{"task":"t"},"samples":[{"id":1,"epoch":1,"scores":{"s":{"value":NaN}},"messages":[{"role":"assistant","content":"attachment://x"}],"attachments":{"x":"y"}}]}`))
	f.Add(testLog(f))
	f.Add(buildZip(f, entry{"samples/1_epoch_1.json", `{"id":1,"epoch":1,"messages":[{"role":"user","content":"q"}]}`, zstdMethod}))
	f.Add(buildZip(f, entry{"samples/a_epoch_1/sample.json", `{"id":"a","epoch":1,"message_refs":[[0,1]]}`, zip.Deflate},
		entry{"samples/a_epoch_1/messages/0.json", `[{"role":"user","content":"attachment://0"}]`, zip.Store},
		entry{"samples/a_epoch_1/attachments/0.json", `["x"]`, zstdMethod}))
	f.Fuzz(func(t *testing.T, data []byte) {
		New().Detect(format.NewProbe("f.eval", data, false))
		for _, layout := range []string{LayoutJSON, LayoutEval} {
			err := New().Normalize(context.Background(), bytes.NewReader(data), format.Source{Path: "f", File: "f"}, layout,
				func(sl *model.Storyline) error {
					if err := testutil.CheckIdentity(sl); err != nil {
						t.Fatal(err)
					}
					return nil
				})
			var pe *format.ParseError
			if err != nil && !errors.As(err, &pe) {
				t.Fatalf("%s: error is not a ParseError: %v", layout, err)
			}
		}
	})
}
