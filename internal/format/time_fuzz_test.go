package format

import (
	"reflect"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/model"
)

// FuzzUTCTime checks the in-place parser of the usual timestamp form
// against the general path on the inputs it accepts.
func FuzzUTCTime(f *testing.F) {
	for _, s := range []string{`"2026-02-23T11:41:32.787Z"`, `"2026-02-23T11:41:32Z"`, `"2024-02-29T23:59:59.123456789Z"`,
		`"2023-02-29T00:00:00Z"`, `"0000-01-01T00:00:00Z"`, `"0001-01-01T00:00:00Z"`, `"2026-13-01T00:00:00Z"`,
		`"2026-04-31T24:00:00.Z"`, `"1900-02-29T00:00:00Z"`, `"2000-02-29T00:00:00Z"`, `"2026-06-31T00:00:00Z"`, `"2026-12-31T23:59:59Z"`, `"0000-02-29T12:00:00Z"`, `"1969-12-31T23:59:59.999999999Z"`, `"9999-12-31T23:59:59Z"`,
		`"2026-02-23T11:41:60.1234567890Z"`, `"2026-02-23 11:41:32Z"`, `"2026-02-23T11:41:32+01:00"`} {
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

// TestUTCTimeAcrossYears checks utcTime against the general path at times
// spread over years 0 to 9999 (every month and leap day, odd hours and
// fractions), which the fuzzer rarely writes.
func TestUTCTimeAcrossYears(t *testing.T) {
	step := 241*time.Hour + 17*time.Minute + 29*time.Second + 123456789
	for at := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC); at.Year() < 10000; at = at.Add(step) {
		raw := []byte(at.Format(`"2006-01-02T15:04:05.000000000Z"`))
		got, ok := utcTime(raw)
		want, wantOK := timeOf(raw)
		if !ok || !wantOK || !reflect.DeepEqual(model.Time(got), model.Time(want)) || !got.Equal(at) {
			t.Fatalf("%s: utcTime %v %v, the general path %v %v", raw, got, ok, want, wantOK)
		}
	}
}
