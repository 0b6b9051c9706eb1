package objstore

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRetryDefaultsAndBackoff(t *testing.T) {
	if got := (Retry{}).withDefaults(); got != DefaultRetry {
		t.Fatalf("zero Retry = %+v, want the defaults %+v", got, DefaultRetry)
	}
	r := Retry{Attempts: 2, BaseDelay: 100 * time.Millisecond, MaxDelay: 50 * time.Millisecond}.withDefaults()
	if r.Attempts != 2 || r.MaxDelay != 100*time.Millisecond || r.ReadRequests != DefaultRetry.ReadRequests {
		t.Fatalf("withDefaults = %+v: kept fields, MaxDelay raised to BaseDelay, the rest defaulted", r)
	}
	// Equal jitter: retry n waits between half and all of min(base·2^(n-1), max).
	r = Retry{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	for n, full := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 60: time.Second} {
		for range 200 {
			if d := r.backoff(n); d < full/2 || d > full {
				t.Fatalf("backoff(%d) = %s, want within [%s, %s]", n, d, full/2, full)
			}
		}
	}
}

func TestParseContentRange(t *testing.T) {
	for _, tc := range []struct {
		in           string
		first, total int64
		ok           bool
	}{
		{"bytes 100-199/200", 100, 200, true},
		{" bytes 0-0/1", 0, 1, true},
		{"bytes 5-9/*", 0, 0, false},
		{"bytes */200", 0, 0, false},
		{"bytes 200-200/200", 0, 0, false}, // starts past the end
		{"bytes -5-10/20", 0, 0, false},
		{"items 1-2/3", 0, 0, false},
		{"", 0, 0, false},
	} {
		first, total, err := parseContentRange(tc.in)
		if (err == nil) != tc.ok || first != tc.first || total != tc.total {
			t.Errorf("parseContentRange(%q) = %d, %d, %v", tc.in, first, total, err)
		}
	}
}

func FuzzParseContentRange(f *testing.F) {
	for _, s := range []string{"bytes 100-199/200", "bytes 0-0/1", "bytes */200", "bytes 9223372036854775807-1/9223372036854775807", "bytes 1-/2", "bytes 1-2/3/4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		first, total, err := parseContentRange(s)
		if err == nil && (first < 0 || first >= total) {
			t.Fatalf("accepted %q as first %d of %d", s, first, total)
		}
		if err != nil && len(err.Error()) > 1000 { // 80 runes of input, quoted
			t.Fatalf("error text of %d bytes", len(err.Error()))
		}
	})
}

func TestErrorTextIsOneScrubbedLine(t *testing.T) {
	s := newScrubber(Config{SecretKey: "sekrit-key"})
	cause := errors.New("GET https://acct.blob.core.windows.net/c/k?sv=2024&sig=abc%2Fdef&se=1\n----------\nRESPONSE 403: echo sekrit-key\n----------")
	tl := &tally{}
	tl.fail("GET https://b.s3.amazonaws.com/k?X-Amz-Signature=deadbeef: 503 Service Unavailable")
	tl.fail("503 Service Unavailable")
	msg := s.error("read", "az://c/k", tl, cause).Error()
	for _, leak := range []string{"sekrit-key", "abc%2Fdef", "deadbeef", "\n"} {
		if strings.Contains(msg, leak) {
			t.Errorf("error text holds %q: %s", leak, msg)
		}
	}
	if !strings.HasPrefix(msg, "read az://c/k: GET https://acct.blob.core.windows.net/c/k?sv=2024&sig=[redacted]&se=1; RESPONSE 403: echo [redacted]") ||
		!strings.HasSuffix(msg, "(2 failed attempts, the last: 503 Service Unavailable)") {
		t.Errorf("error text: %s", msg)
	}
}

func TestSameBytes(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // several buffers
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"", "", true},
		{long, long, true},
		{long, long + "y", false},
		{long + "y", long, false},
		{long[:1000] + "a" + long[1001:], long, false},
		{"", "z", false},
	} {
		if got, err := sameBytes(strings.NewReader(tc.a), strings.NewReader(tc.b)); err != nil || got != tc.same {
			t.Errorf("sameBytes(%d bytes, %d bytes) = %v, %v; want %v", len(tc.a), len(tc.b), got, err, tc.same)
		}
	}
}
