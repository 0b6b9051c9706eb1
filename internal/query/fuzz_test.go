package query

import (
	"context"
	"errors"
	"testing"
)

// FuzzAnalyze: no input may panic, and every answer is either a
// ValidationError or an Analysis whose references name mounted Datasets
// and known relations.
func FuzzAnalyze(f *testing.F) {
	for _, tc := range loadCases(f) {
		f.Add(tc.sql, tc.opts.Default)
	}
	p := testParser(f)
	f.Fuzz(func(t *testing.T, sql string, def bool) {
		opts := AnalyzeOptions{Datasets: []string{"ds", "other"}, Default: def}
		res, err := p.Analyze(context.Background(), sql, opts)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("non-validation error for %q: %v", sql, err)
			}
			return
		}
		for _, r := range res.Refs {
			if !isRelation(r.Relation) || (r.Dataset != "ds" && r.Dataset != "other" && !(def && r.Dataset == DefaultSchema)) {
				t.Fatalf("%q: bad reference %+v", sql, r)
			}
			r.Candidates.MayMatch("a.json")
			_ = r.Candidates.String()
		}
	})
}
