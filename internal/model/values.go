package model

import (
	"strconv"
	"time"
)

// Str returns a pointer to s, or nil when s is empty: most nullable text
// columns treat an empty source value as absent.
func Str(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// StrAlways returns a pointer to s even when s is empty.
func StrAlways(s string) *string { return &s }

// Int returns a pointer to v.
func Int(v int64) *int64 { return &v }

// Float returns a pointer to v.
func Float(v float64) *float64 { return &v }

// Time returns a pointer to t in UTC, or nil for the zero time.
func Time(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// Deref returns *p or "" for nil.
func Deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
