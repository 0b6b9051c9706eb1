package format

import (
	"context"
	"io"
	"testing"
)

// A file read whole into memory is handed to ReadWhole as its unread bytes,
// not a copy, counted against the document budget like any other, and the
// reader is at its end afterwards.
func TestReadWholeTakesAFileInMemory(t *testing.T) {
	file := []byte(`xx{"steps":[]}`)
	r := NewInMemory(file)
	if _, err := io.ReadFull(r, make([]byte, 2)); err != nil { // an adapter read a little first
		t.Fatal(err)
	}
	b := NewDocumentBudget(1 << 20)
	ctx := WithDocumentBudget(context.Background(), b)
	data, release, err := ReadWhole(ctx, r, Source{Path: "a.json", Size: int64(len(file))}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != `{"steps":[]}` || &data[0] != &file[2] {
		t.Fatalf("ReadWhole = %q at %p, want the file's unread bytes at %p", data, &data[0], &file[2])
	}
	if b.used == 0 {
		t.Fatal("the document is not counted against the budget")
	}
	if n, err := r.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("the reader after ReadWhole: %d bytes, %v; want its end", n, err)
	}
	release()
	if b.used != 0 {
		t.Fatalf("%d bytes still held after release", b.used)
	}
}
