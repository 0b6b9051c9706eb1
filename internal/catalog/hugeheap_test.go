package catalog

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/pchronicle/pchronicle/internal/hugeheap"
)

// discoverChildEnv makes the test binary discover one directory in a
// process of its own (a huge-page reservation happens once per process)
// and print whether that reserved, then whether a reservation is possible
// here at all.
const discoverChildEnv = "CATALOG_HUGEHEAP_DISCOVER"

// Many small sources are heap before any of them is read: a Dataset of
// thousands of files reserves huge pages for it as input of their size
// would (docs/performance.md, "Many files, many rows"), and a small one
// does not.
func TestManySourcesReserveHugePages(t *testing.T) {
	threshold := (4 << 20) / sourceHeapBytes // hugeheap reserves from 4 MiB of expected input
	for _, c := range []struct {
		files    int
		reserved bool
	}{
		{files: threshold - 100, reserved: false},
		{files: threshold + 100, reserved: true},
	} {
		t.Run(fmt.Sprint(c.files), func(t *testing.T) {
			root := t.TempDir()
			for i := range c.files {
				if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("c%05d.jsonl", i)), []byte("{}\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestDiscoverChild$")
			cmd.Env = append(os.Environ(), discoverChildEnv+"="+root)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			var found int
			var afterDiscovery, possible bool
			if _, err := fmt.Sscanf(string(out), "found %d, after discovery %t, possible %t", &found, &afterDiscovery, &possible); err != nil || found != c.files {
				t.Fatalf("child said %q (%v), want %d files found", out, err, c.files)
			}
			if !possible {
				t.Skip("this machine gives no huge pages on request (transparent_hugepage not on madvise, or memory capped)")
			}
			if afterDiscovery != c.reserved {
				t.Errorf("discovering %d files reserved huge pages: %t, want %t", c.files, afterDiscovery, c.reserved)
			}
		})
	}
}

// TestDiscoverChild is the child of TestManySourcesReserveHugePages.
func TestDiscoverChild(t *testing.T) {
	root := os.Getenv(discoverChildEnv)
	if root == "" {
		t.Skip("run by TestManySourcesReserveHugePages")
	}
	hugeheap.Allow()
	found, err := discover(context.Background(), root, DefaultOptions(), nil, PathFilter{})
	if err != nil {
		t.Fatal(err)
	}
	afterDiscovery := hugeheap.Reserved()
	hugeheap.Expect(1 << 30)
	fmt.Printf("found %d, after discovery %t, possible %t\n", len(found), afterDiscovery, hugeheap.Reserved())
}
