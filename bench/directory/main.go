// Command directory measures what the Directory's data plane costs
// (docs/performance.md): the latency of the same requests answered by a
// plain `pchronicle serve` and by a `serve --catalog-config` that runs each
// request in a worker process, cold (--warm-workers 0) and warm (the
// default pool), on the bundled examples and on a larger local Dataset.
// Everything runs the real binary over real HTTP, one request at a time.
// Besides wall-clock p50/p99 it reports the CPU time per request of the
// serve process and the workers it waited for (from /proc/PID/stat), which
// a loaded machine inflates much less than latency. Then it runs single
// workers by hand (a job on stdin, as the parent writes it) on Datasets of
// growing size, to show how a worker's CPU grows with the member count.
//
//	go run ./bench/directory [-n 60] [-files 1000] [-sizes 100,1000,3000] [-bin path/to/pchronicle]
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pchronicle/pchronicle/internal/directory"
	"github.com/pchronicle/pchronicle/internal/fsx"
	"github.com/pchronicle/pchronicle/internal/worker"
)

var (
	bin   = flag.String("bin", "", "the pchronicle binary (default: go build ./cmd/pchronicle into a temp dir)")
	n     = flag.Int("n", 60, "timed requests per route and setup (after 3 untimed ones)")
	files = flag.Int("files", 1000, "files of the larger Dataset (copies of the examples)")
	sizes = flag.String("sizes", "100,1000,3000", "Dataset sizes (files) of the single-worker CPU runs, besides the examples")
	pause = flag.Duration("pause", 100*time.Millisecond, "pause between requests, as a person clicking would leave; it lets the warm pool refill")
	work  = flag.String("dir", filepath.Join(os.TempDir(), "pchronicle-bench-directory"), "work directory (reused)")
)

// The user of every Directory setup; fixed keys keep the config reusable.
const (
	accessKey = "pcak_bench"
	secretKey = "bench-secret-0123456789"
)

// request is one measured route. The point query names a file every
// Dataset here has.
type request struct{ label, method, path, body string }

var requests = []request{
	{"catalog GET (`GET /api/catalog`)", "GET", "/api/catalog", ""},
	{"run list (`GET /api/runs?limit=50`)", "GET", "/api/runs?limit=50", ""},
	{"point query (`POST /api/query`, `_file_ = …`)", "POST", "/api/query",
		`{"sql":"SELECT count(*) FROM ex.steps WHERE _file_ = 'atif/fix-failing-test.trajectory.json'"}`},
}

func main() {
	flag.Parse()
	if *n < 1 {
		check(errors.New("-n must be at least 1"))
	}
	root := repoRoot()
	exe := *bin
	if exe == "" {
		exe = build(root)
	}
	examples := filepath.Join(root, "examples", "trajectories")
	large := copies(examples, *files)
	fmt.Printf("%d timed requests per cell, %s apart; p50 / p99 in ms, then CPU ms per request (serve and its workers)\n", *n, *pause)
	for _, ds := range []struct{ name, dir string }{{"examples (3 files)", examples}, {fmt.Sprintf("%d files", count(large)), large}} {
		cfg := directoryConfig(ds.dir)
		setups := []setup{
			{"plain serve", []string{"serve", "ex=" + ds.dir}, false},
			{"worker, cold", []string{"serve", "--catalog-config", cfg, "--warm-workers", "0"}, true},
			{"worker, warm", []string{"serve", "--catalog-config", cfg}, true},
		}
		fmt.Printf("\n## %s\n\n| route | %s |\n|---|%s\n", ds.name, strings.Join(names(setups), " | "), strings.Repeat("---|", len(setups)))
		cells := make([][]string, len(requests))
		for _, s := range setups {
			url, pid, stop := start(exe, s.args)
			for i, rq := range requests {
				cells[i] = append(cells[i], measure(url, pid, rq, s.keys))
			}
			stop()
		}
		for i, rq := range requests {
			fmt.Printf("| %s | %s |\n", rq.label, strings.Join(cells[i], " | "))
		}
	}
	workerCPU(exe, examples)
}

// workerCPU runs one worker per job by hand and prints the median CPU of 5
// runs per route and Dataset size.
func workerCPU(exe, examples string) {
	fmt.Printf("\n## CPU of one worker (median of 5), ms\n\n| Dataset | no job |")
	for _, rq := range requests {
		fmt.Printf(" %s |", rq.label)
	}
	fmt.Printf("\n|---|---|%s\n", strings.Repeat("---|", len(requests)))
	dirs := []string{examples}
	for _, v := range strings.Split(*sizes, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(v))
		check(err)
		dirs = append(dirs, copies(examples, k))
	}
	for _, dir := range dirs {
		row := []string{fmt.Sprintf("%d files", count(dir)), fmt.Sprintf("%.0f", median(5, func() time.Duration { return runWorker(exe, nil) }))}
		for _, rq := range requests {
			path, query, _ := strings.Cut(rq.path, "?")
			job, err := json.Marshal(worker.Job{V: worker.Version,
				Mounts:  []directory.Ticket{{Name: "ex", Dataset: directory.Dataset{URI: dir}}},
				Request: worker.Request{Method: rq.method, Path: path, Query: query, Body: []byte(rq.body)}})
			check(err)
			row = append(row, fmt.Sprintf("%.0f", median(5, func() time.Duration { return runWorker(exe, job) })))
		}
		fmt.Printf("| %s |\n", strings.Join(row, " | "))
	}
}

// runWorker runs `serve --catalog-query-worker` with job on stdin (nil: no
// job, so it only starts and exits) and returns its CPU time.
func runWorker(exe string, job []byte) time.Duration {
	cmd := exec.Command(exe, worker.Args...)
	cmd.Stdin = bytes.NewReader(job)
	var out bytes.Buffer
	cmd.Stdout = &out
	check(cmd.Run())
	if job != nil && !bytes.HasPrefix(out.Bytes(), []byte(`{"status":200,`)) {
		check(fmt.Errorf("the worker answered %.200s", out.Bytes()))
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// median returns the median of k runs of fn, in milliseconds.
func median(k int, fn func() time.Duration) float64 {
	ds := make([]time.Duration, k)
	for i := range ds {
		ds[i] = fn()
	}
	slices.Sort(ds)
	return float64(ds[k/2].Microseconds()) / 1000
}

// setup is one way of serving the Dataset; keys says requests send the
// Directory user's keys.
type setup struct {
	name string
	args []string
	keys bool
}

func names(setups []setup) []string {
	var out []string
	for _, s := range setups {
		out = append(out, s.name)
	}
	return out
}

// measure times n requests after 3 untimed ones and returns
// "p50 / p99 · CPU".
func measure(url string, pid int, rq request, keys bool) string {
	var ds []time.Duration
	var cpu0 time.Duration
	for i := range *n + 3 {
		if i == 3 {
			cpu0 = cpuTime(pid)
		}
		req, err := http.NewRequest(rq.method, url+rq.path, strings.NewReader(rq.body))
		check(err)
		if keys {
			req.Header.Set("X-Catalog-Access-Key", accessKey)
			req.Header.Set("X-Catalog-Secret-Key", secretKey)
		}
		t0 := time.Now()
		resp, err := http.DefaultClient.Do(req)
		check(err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(t0)
		if resp.StatusCode != 200 {
			check(fmt.Errorf("%s %s: %d %s", rq.method, rq.path, resp.StatusCode, body))
		}
		if i >= 3 {
			ds = append(ds, d)
		}
		time.Sleep(*pause)
	}
	cpu := cpuTime(pid) - cpu0
	slices.Sort(ds)
	ms := func(q float64) float64 {
		return float64(ds[min(len(ds)-1, int(q*float64(len(ds))))].Microseconds()) / 1000
	}
	return fmt.Sprintf("%.1f / %.1f · %.0f", ms(0.50), ms(0.99), float64(cpu.Milliseconds())/float64(len(ds)))
}

// cpuTime is the CPU time of process pid and of the children it waited
// for (utime, stime, cutime, cstime of /proc/PID/stat).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	check(err)
	// Fields after "pid (comm)": state is the first; utime is the 12th.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	var ticks int64
	for _, v := range f[11:15] {
		t, err := strconv.ParseInt(v, 10, 64)
		check(err)
		ticks += t
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat times: 100 on Linux.
const clockTicks = 100

// start runs the binary with args on a free loopback port and returns its
// URL and pid once it listens (and, for plain serve, is ready).
func start(exe string, args []string) (string, int, func()) {
	cmd := exec.Command(exe, append(args, "--listen", "127.0.0.1:0", "--log-level", "warn")...)
	stderr, err := cmd.StderrPipe()
	check(err)
	check(cmd.Start())
	sc := bufio.NewScanner(stderr)
	url := ""
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "pchronicle serving "); ok {
			url = u
			break
		}
	}
	if url == "" {
		cmd.Process.Kill()
		check(errors.New("serve did not start"))
	}
	go io.Copy(os.Stderr, stderr)
	for range 600 { // plain serve builds its first Snapshot after listening
		resp, err := http.Get(url + "/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // let the warm pool fill
	return url, cmd.Process.Pid, func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
}

// directoryConfig writes a Directory with one user granted the Dataset ex
// at dir.
func directoryConfig(dir string) string {
	path := filepath.Join(*work, "catalog-"+filepath.Base(dir)+".toml")
	check(os.MkdirAll(*work, 0o755))
	check(os.WriteFile(path, []byte(fmt.Sprintf(`[meta]
version = 1

[users.bench]
access_key = %q
secret_key = %q

[datasets.ex]
uri = %q

[[grants]]
user = "bench"
dataset = "ex"
`, accessKey, secretKey, dir)), 0o600))
	return path
}

// copies builds (once) a Dataset of about n files: copies of the examples,
// each under its own directory, so the point query's file is copy 0's.
func copies(examples string, n int) string {
	dir := filepath.Join(*work, fmt.Sprintf("copies-%d", n))
	if _, err := os.Stat(filepath.Join(dir, ".done")); err == nil {
		return dir
	}
	check(os.RemoveAll(dir))
	var src []string
	check(filepath.WalkDir(examples, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			src = append(src, p)
		}
		return err
	}))
	for i := 0; i*len(src) < n; i++ {
		for _, p := range src {
			rel, _ := filepath.Rel(examples, p)
			if i > 0 {
				rel = filepath.Join(fmt.Sprintf("copy-%04d", i), rel)
			}
			dst := filepath.Join(dir, rel)
			data, err := os.ReadFile(p)
			check(err)
			check(os.MkdirAll(filepath.Dir(dst), 0o755))
			check(os.WriteFile(dst, data, 0o644))
		}
	}
	check(os.WriteFile(filepath.Join(dir, ".done"), nil, 0o644))
	return dir
}

// count is the number of trajectory files under dir.
func count(dir string) int {
	k := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != ".done" {
			k++
		}
		return err
	})
	return k
}

func build(root string) string {
	dir, err := os.MkdirTemp("", "pchronicle-bench-bin-")
	check(err)
	exe := filepath.Join(dir, "pchronicle")
	cmd := exec.CommandContext(context.Background(), "go", "build", "-o", exe, "./cmd/pchronicle")
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
	check(cmd.Run())
	return exe
}

func repoRoot() string {
	wd, err := os.Getwd()
	check(err)
	root, err := fsx.Ancestor(wd, "go.mod")
	check(err)
	return root
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/directory:", err)
		os.Exit(1)
	}
}
