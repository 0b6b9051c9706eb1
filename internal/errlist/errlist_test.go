package errlist

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
)

func TestJoin(t *testing.T) {
	if Join() != nil || Join(nil, nil) != nil {
		t.Fatal("no errors must join to nil")
	}
	one := errors.New("source a.jsonl: bad")
	if got := Join(nil, one, nil); got != one {
		t.Fatalf("one error must come back as itself, got %v", got)
	}
	for _, n := range []int{2, Shown, Shown + 1, 100000} {
		errs := make([]error, n)
		for i := range errs {
			errs[i] = fmt.Errorf("source f%d: bad", i)
		}
		errs[n-1] = fmt.Errorf("source f%d: %w", n-1, fs.ErrNotExist) // errors.Is must see past the cut
		err := Join(errs...)
		msg := err.Error()
		head, more := fmt.Sprintf("%d errors:", n), ""
		if n > Shown {
			head, more = fmt.Sprintf("%d errors; the first %d:", n, Shown), fmt.Sprintf("\n  … and %d more", n-Shown)
		}
		if !strings.HasPrefix(msg, head+"\n  source f0: bad\n") || !strings.HasSuffix(msg, more) {
			t.Errorf("%d errors:\n%s", n, msg)
		}
		if got := strings.Count(msg, "\n  source"); got != min(n, Shown) {
			t.Errorf("%d errors: %d listed, want %d", n, got, min(n, Shown))
		}
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%d errors: errors.Is misses the last error", n)
		}
	}
}

func TestCutLongMessages(t *testing.T) {
	long := errors.New("Invalid string encoding: value \"" + strings.Repeat("é", 3*MaxMessage) + "\"")
	err := Join(long)
	msg := err.Error()
	if len(msg) > MaxMessage+40 || !strings.HasSuffix(msg, fmt.Sprintf("… (%d bytes in all)", len(long.Error()))) {
		t.Fatalf("message of %d bytes: …%s", len(msg), msg[len(msg)-60:])
	}
	if !errors.Is(err, long) {
		t.Fatal("a cut error must still unwrap to the original")
	}
	if !strings.HasPrefix(msg, "Invalid string encoding") || !strings.Contains(Cut(strings.Repeat("é", MaxMessage)), "é…") {
		t.Fatal("cut at a character boundary, keeping the start")
	}
}
