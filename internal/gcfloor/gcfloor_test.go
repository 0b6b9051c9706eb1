package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		floor, base uint64
		want        int
	}{
		{16 * mb, 0, 400},         // nothing measured yet: the runtime's 4 MB minimum goal, scaled to the floor
		{16 * mb, 1 * mb, 400},    // below the minimum goal, the minimum is what GOGC scales
		{16 * mb, 4 * mb, 400},    // goal 4 + 16 MB
		{16 * mb, 5 * mb, 320},    // goal 5 + 16 MB
		{16 * mb, 8 * mb, 200},    // goal 8 + 16 MB
		{16 * mb, 16 * mb, 100},   // at the floor: GOGC=100's own goal, 16 + 16 MB
		{16 * mb, 1024 * mb, 100}, // a large heap is collected as GOGC=100 would
		{3 * mb, 1 * mb, 100},     // a floor under the runtime's minimum changes nothing
	} {
		if got := percent(c.floor, c.base); got != c.want {
			t.Errorf("percent(%d MB, %d B) = %d, want %d", c.floor/mb, c.base, got, c.want)
		}
	}
}

// TestFloorRaisesTheGoalAndStopRestores checks the heap goal itself, which,
// unlike a count of cycles, does not depend on how busy the machine is.
func TestFloorRaisesTheGoalAndStopRestores(t *testing.T) {
	unsetGOGC(t)
	defer debug.SetGCPercent(debug.SetGCPercent(100)) // whatever the test binary started with
	const mb = 1 << 20

	runtime.GC()
	if g := heapGoal(); g >= 16*mb {
		t.Fatalf("heap goal at GOGC=100 with little live = %d MB, want the runtime's 4 MB minimum", g/mb)
	}
	stop, started := Start(64 * mb)
	if !started {
		t.Fatal("Start did not start with GOGC unset")
	}
	runtime.GC()
	if g := heapGoal(); g < 64*mb || g > 72*mb {
		t.Errorf("heap goal with a 64 MB floor and little live = %d MB, want 64–72 MB", g/mb)
	}
	stop()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC after stop = %d, want the 100 in effect before Start", got)
	}
	runtime.GC()
	if g := heapGoal(); g >= 16*mb {
		t.Errorf("heap goal after stop = %d MB, want the runtime's 4 MB minimum again", g/mb)
	}
}

func heapGoal() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestRetunesAsTheLiveHeapChanges checks the GOGC set after each cycle: a
// live heap above the floor is collected at GOGC=100, and one that shrinks
// again gets the floor back.
func TestRetunesAsTheLiveHeapChanges(t *testing.T) {
	unsetGOGC(t)
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	stop, _ := Start(16 << 20)
	defer stop()

	live := make([][]byte, 64)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	waitForGOGC(t, 100, "64 MB live, above the 16 MB floor")
	runtime.KeepAlive(live)
	live = nil
	waitForGOGC(t, 400, "little live: the 4 MB minimum goal scaled to the floor")
}

// waitForGOGC collects until the runtime's GOGC is want: the tuner sets it
// from a cleanup that runs after the cycle.
func waitForGOGC(t *testing.T, want int64, what string) {
	t.Helper()
	sample := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	for range 200 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
		metrics.Read(sample)
		if int64(sample[0].Value.Uint64()) == want {
			return
		}
	}
	t.Fatalf("%s: GOGC = %d, want %d", what, sample[0].Value.Uint64(), want)
}

func TestGOGCFromTheEnvironmentWins(t *testing.T) {
	t.Setenv("GOGC", "100")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	stop, started := Start(64 << 20)
	defer stop()
	if started {
		t.Fatal("Start started although GOGC is set")
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC = %d, want the environment's 100 untouched", got)
	}
}

func unsetGOGC(t *testing.T) {
	if v, ok := os.LookupEnv("GOGC"); ok {
		os.Unsetenv("GOGC")
		t.Cleanup(func() { os.Setenv("GOGC", v) })
	}
}
