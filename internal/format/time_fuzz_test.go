package format

import (
	"reflect"
	"testing"

	"github.com/pchronicle/pchronicle/internal/model"
)

// FuzzUTCTime checks the in-place parser of the usual timestamp form
// against the general path on the inputs it accepts.
func FuzzUTCTime(f *testing.F) {
	for _, s := range []string{`"2026-02-23T11:41:32.787Z"`, `"2026-02-23T11:41:32Z"`, `"2024-02-29T23:59:59.123456789Z"`,
		`"2023-02-29T00:00:00Z"`, `"0000-01-01T00:00:00Z"`, `"0001-01-01T00:00:00Z"`, `"2026-13-01T00:00:00Z"`,
		`"2026-04-31T24:00:00.Z"`, `"2026-02-23T11:41:60.1234567890Z"`, `"2026-02-23 11:41:32Z"`, `"2026-02-23T11:41:32+01:00"`} {
		f.Add([]byte(s))
	}
	if _, ok := utcTime([]byte(`"2026-02-23T11:41:32.787Z"`)); !ok {
		f.Fatal("utcTime rejects the form Codex writes")
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := utcTime(raw)
		if !ok {
			return
		}
		if want, wantOK := timeOf(raw); !wantOK || !got.Equal(want) || !reflect.DeepEqual(model.Time(got), model.Time(want)) {
			t.Fatalf("utcTime %v, the general path %v %v", got, want, wantOK)
		}
	})
}
