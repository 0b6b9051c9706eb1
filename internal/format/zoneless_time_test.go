package format

import (
	"reflect"
	"testing"

	"github.com/pchronicle/pchronicle/internal/model"
)

// FuzzZonelessTime checks the in-place parser of the usual timestamp form
// without a zone against the general path on the inputs it accepts.
func FuzzZonelessTime(f *testing.F) {
	for _, s := range []string{`"2025-10-30T03:50:30.915175"`, `"2025-10-30T03:50:30"`, `"2025-10-30T03:50:30."`, `"2025-10-30T03:50:3Z"`,
		`"2025-10-30T03:50:30.1234567890"`, `"2025-10-30T03:50:30.123456789"`, `"2025-10-30T03:50:30Z"`, `"2025-10-30T03:50:30+01:00"`,
		`"2025-10-30T03:50:30-0100"`, `"2025-10-30 03:50:30"`, `"2024-02-29T23:59:60"`, `"2023-02-29T00:00:00"`, `"20251030"`} {
		f.Add([]byte(s))
	}
	if _, ok := zonelessTime([]byte(`"2025-10-30T03:50:30.915175"`)); !ok {
		f.Fatal("zonelessTime rejects the form OpenHands writes")
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := zonelessTime(raw)
		if !ok {
			return
		}
		if want, wantOK := timeOf(raw); !wantOK || !got.Equal(want) || !reflect.DeepEqual(model.Time(got), model.Time(want)) {
			t.Fatalf("zonelessTime %v, the general path %v %v", got, want, wantOK)
		}
	})
}
