package format

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"
)

// TestReadAtMost checks readAtMost against io.ReadAll of a LimitReader, for
// files (whose size sizes the buffer, also when the file is read from
// elsewhere than its start) and for other readers, around the limit, into
// a new buffer and into one given for reuse.
func TestReadAtMost(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, 511, 512, 513, 4096, 100_000} {
		data := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
		path := filepath.Join(dir, "f")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int64{1, 2, 511, 512, 513, int64(size), int64(size) + 1, 1 << 20} {
			want, _ := io.ReadAll(io.LimitReader(bytes.NewReader(data), n))
			readers := map[string]func() io.Reader{
				"bytes": func() io.Reader { return bytes.NewReader(data) },
				"half":  func() io.Reader { return iotest.HalfReader(bytes.NewReader(data)) },
				"one":   func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) },
			}
			for name, r := range readers {
				if got, err := readAtMost(nil, r(), n); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("%s size %d n %d: %d bytes, %v; want %d", name, size, n, len(got), err, len(want))
				}
				// A buffer given back for reuse holds an earlier file's
				// bytes; smaller than needed, it is grown.
				for _, room := range []int{600, 1 << 21} {
					dirty := bytes.Repeat([]byte{0xff}, room)
					if got, err := readAtMost(dirty, r(), n); err != nil || !bytes.Equal(got, want) {
						t.Fatalf("%s size %d n %d into %d dirty bytes: %d bytes, %v; want %d", name, size, n, room, len(got), err, len(want))
					}
				}
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			reused := make([]byte, 1<<21)
			if got, err := readAtMost(reused, f, n); err != nil || !bytes.Equal(got, want) || (len(got) > 0 && &got[0] != &reused[0]) {
				t.Fatalf("file size %d n %d into a reused buffer: %d bytes, %v; want %d in its memory", size, n, len(got), err, len(want))
			}
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			got, err := readAtMost(nil, f, n)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("file size %d n %d: %d bytes, %v; want %d", size, n, len(got), err, len(want))
			}
			if size > 0 && n > 1 && int64(cap(got)) > min(int64(size)+1, n) {
				t.Fatalf("file size %d n %d: buffer of %d", size, n, cap(got))
			}
			if _, err := f.Seek(int64(size/2), io.SeekStart); err != nil {
				t.Fatal(err)
			}
			rest, _ := io.ReadAll(io.LimitReader(bytes.NewReader(data[size/2:]), n))
			if got, err := readAtMost(nil, f, n); err != nil || !bytes.Equal(got, rest) {
				t.Fatalf("file size %d n %d from the middle: %d bytes, %v; want %d", size, n, len(got), err, len(rest))
			}
			f.Close()
		}
	}
	if _, err := readAtMost(nil, iotest.ErrReader(io.ErrUnexpectedEOF), 10); err != io.ErrUnexpectedEOF {
		t.Fatalf("err = %v", err)
	}
}
