package normcache

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// helperEnv makes the test binary one of the processes of
// TestProcessesShareTheCache.
const helperEnv = "PCHRONICLE_NORMCACHE_HELPER"

const (
	helperKeys   = 12
	helperRounds = 60
	helperSize   = 4000 // bytes per relation: an entry is ~12 KB
	helperBound  = 60_000
)

// expected is what every process stores for key i: a reader can tell a
// file of another key, or a torn one.
func expected(rel string, i int) []byte {
	unit := fmt.Sprintf("%s/key-%d;", rel, i)
	return bytes.Repeat([]byte(unit), helperSize/len(unit)+1)[:helperSize]
}

// TestProcessesShareTheCache runs four processes at once — say two CLI
// queries and a server — over one small cache directory: each looks keys
// up, checks every hit byte for byte against what any process stores for
// that key, and stores what it missed, so entries are written, served,
// evicted and compacted concurrently. No process may see a wrong or torn
// file, fail a store, or leave the cache over its bound.
func TestProcessesShareTheCache(t *testing.T) {
	if dir := os.Getenv(helperEnv); dir != "" {
		if err := helper(dir); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(3)
		}
		return
	}
	dir := t.TempDir()
	var wg sync.WaitGroup
	outs := make([]string, 4)
	errs := make([]error, 4)
	for p := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestProcessesShareTheCache$", "-test.count=1")
			cmd.Env = append(os.Environ(), helperEnv+"="+dir)
			out, err := cmd.CombinedOutput()
			outs[p], errs[p] = string(out), err
		}()
	}
	wg.Wait()
	hits := 0
	for p := range outs {
		if errs[p] != nil {
			t.Fatalf("process %d: %v\n%s", p, errs[p], outs[p])
		}
		i := strings.Index(outs[p], "hits=")
		if i < 0 {
			t.Fatalf("process %d printed no summary:\n%s", p, outs[p])
		}
		n, _ := strconv.Atoi(strings.Fields(outs[p][i+len("hits="):])[0])
		hits += n
	}
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if hits == 0 || st.Evicted == 0 || st.Failures != 0 || st.Rejected != 0 || st.Bytes > helperBound || st.Hits != int64(hits) {
		t.Fatalf("after the processes: %d hits seen, stats %+v", hits, st)
	}
}

func helper(dir string) error {
	c, err := Open(dir)
	if err != nil {
		return err
	}
	hits := 0
	for round := 0; round < helperRounds; round++ {
		i := (round*7 + os.Getpid()) % helperKeys
		k := c.Key(strconv.Itoa(i))
		tmp, err := os.MkdirTemp("", "normcache-helper-")
		if err != nil {
			return err
		}
		s := c.Session(filepath.Join(tmp, "links"), helperBound)
		if h := s.Lookup([]Key{k}, Smallest)[0]; h != nil {
			hits++
			for _, rel := range []string{"runs", "steps"} {
				got, err := os.ReadFile(h.Files[rel])
				if err != nil {
					return err
				}
				if !bytes.Equal(got, expected(rel, i)) {
					return fmt.Errorf("key %d: %s served %d bytes that are not what was stored", i, rel, len(got))
				}
			}
		} else {
			files := map[string]string{}
			for _, rel := range []string{"runs", "steps"} {
				p := filepath.Join(tmp, rel+".parquet")
				if err := os.WriteFile(p, expected(rel, i), 0o600); err != nil {
					return err
				}
				files[rel] = p
			}
			if err := s.Store(context.Background(), []Member{{Key: k, File: strconv.Itoa(i)}}, []string{strconv.Itoa(i)}, files); err != nil {
				return err
			}
		}
		if err := s.Close(); err != nil {
			return err
		}
		os.RemoveAll(tmp)
	}
	fmt.Printf("hits=%d\n", hits)
	return nil
}
