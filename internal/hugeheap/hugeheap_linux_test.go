package hugeheap

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// scenarioEnv makes the test binary run one scenario (helper) and print
// what it saw: whether it reserved, whether memory allocated afterwards is
// advised for huge pages, and the page faults touching it took. Each runs
// in a process of its own because a reservation is once per process.
const scenarioEnv = "HUGEHEAP_SCENARIO"

// touchedBytes is what a scenario allocates after its Expect calls, touching
// every page; farBytes what it allocates next without touching it, whose
// end lies beyond the first 64 MiB of heap (an events append keeps that
// much).
const (
	touchedBytes = 16 << 20
	farBytes     = 112 << 20
)

func TestReservationFollowsAllowAndExpect(t *testing.T) {
	setting, err := os.ReadFile(thpSetting)
	if err != nil || !bytes.Contains(setting, []byte("[madvise]")) {
		t.Skipf("transparent huge pages are not on madvise here (%s: %q, %v)", thpSetting, setting, err)
	}
	if capped() {
		t.Skip("this process's memory is capped (ulimit -v or -d), so no scenario would reserve")
	}
	for _, c := range []struct {
		scenario string
		reserved bool
	}{
		{"not-allowed", false},
		{"below-threshold", false},
		{"reaches-threshold", true},
		{"memory-capped", false},
		{"heap-already-large", false},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestScenario$", "-test.v")
			cmd.Env = append(os.Environ(), scenarioEnv+"="+c.scenario)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("scenario: %v\n%s", err, out)
			}
			got := map[string]string{}
			for _, line := range strings.Split(string(out), "\n") {
				if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
					got[k] = v
				}
			}
			want := strconv.FormatBool(c.reserved)
			if got["reserved"] != want || got["advised"] != want || got["advised_far"] != want {
				t.Errorf("reserved=%s advised=%s advised_far=%s, want all %s\n%s", got["reserved"], got["advised"], got["advised_far"], want, out)
			}
			t.Logf("page faults touching %d MiB allocated afterwards: %s", touchedBytes>>20, got["faults"])
		})
	}
}

// TestScenario is the child of TestReservationFollowsAllowAndExpect.
func TestScenario(t *testing.T) {
	scenario := os.Getenv(scenarioEnv)
	switch scenario {
	case "":
		t.Skip("run by TestReservationFollowsAllowAndExpect")
	case "not-allowed":
		Expect(1 << 30)
	case "below-threshold":
		Allow()
		Expect(reserveAfter / 2)
		Expect(reserveAfter/2 - 1)
	case "heap-already-large":
		// A heap that held more than a reservation before: what it freed
		// could be reused by one, and would be cleared page by page.
		held := make([][]byte, 0, 40)
		for range cap(held) {
			held = append(held, make([]byte, 4<<20))
		}
		runtime.KeepAlive(held)
		runtime.GC() // frees them: held is not used again
		Allow()
		Expect(reserveAfter)
	case "reaches-threshold", "memory-capped":
		if scenario == "memory-capped" {
			lim := unix.Rlimit{Cur: 1 << 40, Max: unix.RLIM_INFINITY} // far above what the test maps
			if err := unix.Setrlimit(unix.RLIMIT_DATA, &lim); err != nil {
				t.Fatal(err)
			}
		}
		Allow()
		Expect(reserveAfter / 2)
		Expect(reserveAfter / 2)
	default:
		t.Fatalf("unknown scenario %q", scenario)
	}
	before := minorFaults(t)
	buf := make([]byte, touchedBytes)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	faults := minorFaults(t) - before
	far := make([]byte, farBytes)
	fmt.Printf("reserved=%t\nadvised=%t\nadvised_far=%t\nfaults=%d\n", Reserved(), advised(t, uintptr(unsafe.Pointer(&buf[0]))),
		advised(t, uintptr(unsafe.Pointer(&far[len(far)-1]))), faults)
	runtime.KeepAlive(buf)
}

func minorFaults(t *testing.T) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return ru.Minflt
}

// advised reports whether the mapping holding addr carries the huge-page
// advice ("hg" among its VmFlags in /proc/self/smaps).
func advised(t *testing.T, addr uintptr) bool {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	inside := false
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(fields[0], "-"); ok && len(fields) >= 5 {
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				inside = uint64(addr) >= l && uint64(addr) < h
				continue
			}
		}
		if inside && fields[0] == "VmFlags:" {
			for _, flag := range fields[1:] {
				if flag == "hg" {
					return true
				}
			}
			return false
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("no mapping holds %#x", addr)
	return false
}
