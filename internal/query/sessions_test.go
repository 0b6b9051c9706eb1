package query

import (
	"context"
	"sort"
	"strings"
	"testing"
)

func TestSessionValues(t *testing.T) {
	p := testParser(t)
	for _, tt := range []struct {
		sql  string
		want string // "" = not finite
	}{
		{"SELECT * FROM runs WHERE session_id = 'a'", "a"},
		{"SELECT * FROM steps WHERE session_id IN ('a', 'b') AND source = 'agent'", "a,b"},
		{"SELECT * FROM steps WHERE session_id = 'a' OR session_id = 'b'", "a,b"},
		{"SELECT * FROM steps WHERE session_id = 'a' OR source = 'agent'", ""},
		{"SELECT * FROM steps WHERE session_id <> 'a'", ""},
		{"SELECT * FROM steps WHERE session_id LIKE 'a%'", ""},
		{"SELECT * FROM steps s WHERE s.session_id = 'x' AND s._file_ = 'f'", "x"},
		{"SELECT * FROM runs r JOIN steps s ON r._file_ = s._file_ AND r.session_id = s.session_id WHERE r.session_id = 'k'", "k|k"},
		{"SELECT * FROM runs r LEFT JOIN steps s ON r._file_ = s._file_ AND r.session_id = s.session_id WHERE r.session_id = 'k'", "k|"},
		{"SELECT * FROM runs r JOIN steps s USING (_file_) WHERE r.session_id = 'k'", "k|"},
		{"SELECT * FROM runs WHERE session_id = 'a' USING SAMPLE 10", ""},
	} {
		a, err := p.Analyze(context.Background(), tt.sql, AnalyzeOptions{Default: true})
		if err != nil {
			t.Fatalf("%s: %v", tt.sql, err)
		}
		var got []string
		for _, r := range a.Refs {
			v, ok := r.Sessions.Values()
			if !ok {
				got = append(got, "")
				continue
			}
			sort.Strings(v)
			got = append(got, strings.Join(v, ","))
		}
		if strings.Join(got, "|") != tt.want {
			t.Errorf("%s: sessions %q, want %q", tt.sql, strings.Join(got, "|"), tt.want)
		}
	}
}
