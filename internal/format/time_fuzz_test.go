package format

import (
	"reflect"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/model"
)

// FuzzUTCTime checks the in-place parsers of the usual timestamp form
// (utcTime, and zonelessTime without a zone) against the general path on
// the inputs they accept.
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
	// zonelessTime: the form without a zone.
	for _, s := range []string{`"2025-10-30T03:50:30.915175"`, `"2025-10-30T03:50:30"`, `"2025-10-30T03:50:30."`, `"2025-10-30T03:50:3Z"`,
		`"2025-10-30T03:50:30.1234567890"`, `"2025-10-30T03:50:30.123456789"`, `"2025-10-30T03:50:30-0100"`, `"2025-10-30 03:50:30"`,
		`"2024-02-29T23:59:60"`, `"2023-02-29T00:00:00"`, `"20251030"`} {
		f.Add([]byte(s))
	}
	if _, ok := zonelessTime([]byte(`"2025-10-30T03:50:30.915175"`)); !ok {
		f.Fatal("zonelessTime rejects the form OpenHands writes")
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for name, parse := range map[string]func([]byte) (time.Time, bool){"utcTime": utcTime, "zonelessTime": zonelessTime} {
			got, ok := parse(raw)
			if !ok {
				continue
			}
			if want, wantOK := timeOf(raw); !wantOK || !got.Equal(want) || !reflect.DeepEqual(model.Time(got), model.Time(want)) {
				t.Fatalf("%s %v, the general path %v %v", name, got, want, wantOK)
			}
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
