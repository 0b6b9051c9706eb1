package cli

import (
	"bytes"
	"fmt"
	"testing"
)

// writeCounter records what is written to it and in how many calls.
type writeCounter struct {
	bytes.Buffer
	calls int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.calls++
	return w.Buffer.Write(p)
}

// Every format prints its rows exactly, and a long result reaches the
// output in a few large writes: a write per row or table cell was a system
// call each, which made `ls` of 50,000 files take seconds.
func TestRowWriterFormatsAndBuffers(t *testing.T) {
	cols := []string{"name", "n"}
	rows := [][]any{{"a\tb\nc", 1}, {nil, 22}}
	tests := []struct{ format, want string }{
		{fmtTable, "name     n\na b\\nc   1\nNULL    22\n"},
		{fmtMarkdown, "| name | n |\n| --- | ---:|\n| a b\\nc | 1 |\n| NULL | 22 |\n"},
		{fmtCSV, "name,n\n\"a\tb\nc\",1\n,22\n"},
		{fmtJSON, "[\n{\"name\":\"a\\tb\\nc\",\"n\":1},\n{\"name\":null,\"n\":22}\n]\n"},
		{fmtJSONL, "{\"name\":\"a\\tb\\nc\",\"n\":1}\n{\"name\":null,\"n\":22}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			var w writeCounter
			rw := newRowWriter(&w, tt.format, cols)
			for _, r := range rows {
				if err := rw.Write(r); err != nil {
					t.Fatal(err)
				}
			}
			if err := rw.Close(); err != nil {
				t.Fatal(err)
			}
			if w.String() != tt.want {
				t.Fatalf("output:\n%q\nwant:\n%q", w.String(), tt.want)
			}

			w = writeCounter{}
			rw = newRowWriter(&w, tt.format, cols)
			const n = 10000
			for i := range n {
				if err := rw.Write([]any{fmt.Sprintf("row-%05d", i), i}); err != nil {
					t.Fatal(err)
				}
			}
			if err := rw.Close(); err != nil {
				t.Fatal(err)
			}
			if max := w.Len()/(64<<10) + 2; w.calls > max {
				t.Fatalf("%d rows (%d bytes) took %d writes, want at most %d", n, w.Len(), w.calls, max)
			}
		})
	}
}
