package format

import (
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/model"
)

// A usage figure whose number does not fit its column (1e999, a 30-digit
// count) leaves the column NULL and is kept, as written, in the step's
// extra; figures that fit are read as ever.
func TestUsageNumbersOutOfRangeAreKeptInExtra(t *testing.T) {
	u := ParseUsage([]byte(`{"prompt_tokens":123456789012345678901234567890,"completion_tokens":7,` +
		`"prompt_tokens_details":{"cached_tokens":-1e999},"cost":1e999}`))
	if u.Prompt != nil || u.Cost != nil || u.Completion == nil || *u.Completion != 7 {
		t.Fatalf("usage %+v", u)
	}
	var st model.Step
	u.Apply(&st)
	if st.Extra == nil {
		t.Fatal("nothing kept in extra")
	}
	for _, want := range []string{`"prompt_tokens":"123456789012345678901234567890"`, `"cost":"1e999"`, `"cached_tokens":"-1e999"`} {
		if !strings.Contains(*st.Extra, want) {
			t.Errorf("extra %s lacks %s", *st.Extra, want)
		}
	}
	for _, tt := range []struct {
		raw      string
		int, flt bool
	}{
		{`1e999`, true, true}, {`-1e999`, true, true}, {`123456789012345678901234567890`, true, false},
		{`9223372036854775807`, false, false}, {`1.5`, false, false}, {`"1e999"`, false, false}, {`1e300`, true, false},
		{`null`, false, false}, {`42`, false, false},
	} {
		if got := IntOutOfRange([]byte(tt.raw)); got != tt.int {
			t.Errorf("IntOutOfRange(%s) = %v", tt.raw, got)
		}
		if got := FloatOutOfRange([]byte(tt.raw)); got != tt.flt {
			t.Errorf("FloatOutOfRange(%s) = %v", tt.raw, got)
		}
	}
}
