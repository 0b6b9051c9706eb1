package engine

import (
	"bytes"
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// limitData caps the memory this process may map from now on at what it
// maps now (returned) plus extra (0: no cap). An allocation beyond fails:
// DuckDB's with an out-of-memory error, Go's by ending the process. Either
// way the engine, in another process, survives.
func limitData(extra int64) (int64, error) {
	now, err := mappedData()
	if err != nil || extra <= 0 {
		return now, err
	}
	limit := uint64(now + extra)
	return now, unix.Setrlimit(unix.RLIMIT_DATA, &unix.Rlimit{Cur: limit, Max: limit})
}

// mappedData is the process's VmData: its private writable memory,
// reserved or touched, which is what RLIMIT_DATA caps.
func mappedData() (int64, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	_, rest, ok := bytes.Cut(status, []byte("\nVmData:"))
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	kb, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(line), []byte("kB")))), 10, 64)
	if !ok || err != nil {
		return 0, errors.New("no VmData in /proc/self/status")
	}
	return kb << 10, nil
}
