//go:build unix

package fsx

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestOpenInputFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// No writer ever comes: the open stops on cancellation.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := OpenInput(ctx, fifo); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), fifo) {
		t.Fatalf("OpenInput of a FIFO without a writer: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the cancelled open took %s", d)
	}
	// With a writer, the FIFO reads like a file.
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		w.WriteString("line 1\nline 2\n")
		w.Close()
	}()
	f, err := OpenInput(context.Background(), fifo)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil || string(data) != "line 1\nline 2\n" {
		t.Fatalf("read %q, %v", data, err)
	}
}
