// Package errlist joins many errors into one whose message stays short: a
// query over 100,000 bad files must not print 100,000 messages. The joined
// error still unwraps to every error, so errors.Is and errors.As see them
// all.
package errlist

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Shown is how many errors a joined message lists; MaxMessage bounds the
// bytes of each one (a DuckDB message can quote a whole Parquet page).
const (
	Shown      = 10
	MaxMessage = 2000
)

// Join returns nil when every error is nil, the error itself (its message
// bounded) when there is one, and otherwise a *List of the non-nil errors.
func Join(errs ...error) error {
	var l List
	for _, err := range errs {
		if err != nil {
			l.Errs = append(l.Errs, err)
		}
	}
	switch len(l.Errs) {
	case 0:
		return nil
	case 1:
		if len(l.Errs[0].Error()) <= MaxMessage {
			return l.Errs[0]
		}
	}
	return &l
}

// List is several errors. Its message is the count, the first Shown
// messages (each cut to MaxMessage bytes) and how many more there are.
type List struct{ Errs []error }

func (l *List) Error() string {
	if len(l.Errs) == 1 {
		return Cut(l.Errs[0].Error())
	}
	var b strings.Builder
	if len(l.Errs) > Shown {
		fmt.Fprintf(&b, "%d errors; the first %d:", len(l.Errs), Shown)
	} else {
		fmt.Fprintf(&b, "%d errors:", len(l.Errs))
	}
	for _, err := range l.Errs[:min(Shown, len(l.Errs))] {
		b.WriteString("\n  ")
		b.WriteString(strings.ReplaceAll(Cut(err.Error()), "\n", "\n    "))
	}
	if n := len(l.Errs) - Shown; n > 0 {
		fmt.Fprintf(&b, "\n  … and %d more", n)
	}
	return b.String()
}

func (l *List) Unwrap() []error { return l.Errs }

// Cut bounds one message to MaxMessage bytes (at a character boundary),
// saying how long it was.
func Cut(msg string) string {
	if len(msg) <= MaxMessage {
		return msg
	}
	cut := MaxMessage
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes in all)", msg[:cut], len(msg))
}
