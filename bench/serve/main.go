// Command serve benchmarks `pchronicle serve` over HTTP from a second
// process, on generated real-shaped data, and load-tests it
// (docs/performance.md):
//
//  1. a routed session_id point query on a 10,000-source Dataset, against
//     the same query with routing off (p50 and p99 over HTTP);
//
//  2. the routing index's memory per million rows (in process);
//
//  3. a refresh after one of 10,000 files changed, then the first
//     aggregate, against the same aggregate on the old generation;
//
//  4. a page of 100 steps of a 100,000-step Storyline;
//
//  5. a load test: mixed point queries, run lists, Storyline pages and SQL
//     from concurrent clients while files are added and the server
//     refreshes every few seconds — no 5xx, and every answer consistent
//     with the snapshot it names.
//
//     go run ./bench/serve [-quick] [-load 60s] [-only point,memory,refresh,page,load]
package main

import (
	"bytes"

	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

var (
	quick = flag.Bool("quick", false, "smaller sizes for a smoke run")
	load  = flag.Duration("load", 60*time.Second, "load test duration")
	only  = flag.String("only", "point,memory,refresh,page,load", "benchmarks to run")
	work  = flag.String("dir", filepath.Join(os.TempDir(), "pchronicle-bench-serve"), "work directory (datasets are reused)")
	bin   = flag.String("bin", "", "pchronicle binary (default: built from this checkout)")
)

func main() {
	flag.Parse()
	check(os.MkdirAll(*work, 0o755))
	if *bin == "" {
		*bin = filepath.Join(*work, "pchronicle")
		cmd := exec.Command("go", "build", "-o", *bin, "./cmd/pchronicle")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		check(cmd.Run())
	}
	n := 10000
	if *quick {
		n = 1000
	}
	want := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		want[s] = true
	}
	if want["point"] {
		pointQuery(n)
	}
	if want["memory"] {
		indexMemory()
	}
	if want["refresh"] {
		refresh(n)
	}
	if want["page"] {
		bigStoryline()
	}
	if want["load"] {
		rep, err := Load(LoadConfig{Bin: *bin, Dir: filepath.Join(*work, "load"), Duration: *load, Clients: 4, Files: n / 10})
		check(err)
		fmt.Println(rep)
		if rep.Failures > 0 {
			os.Exit(1)
		}
	}
}

// chat is one conversation of session id with a few tool calls.
func chat(id string, i int) string {
	msgs := []string{`{"role":"system","content":"You are a coding agent working in a repository."}`,
		fmt.Sprintf(`{"role":"user","content":"Fix issue %d: the parser rejects dates before 1970."}`, i)}
	for c := 0; c < 1+i%4; c++ {
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"assistant","content":"Looking at step %d.","tool_calls":[{"id":"call_%d","type":"function","function":{"name":"bash","arguments":"{\"cmd\":\"grep -rn parse_date src/%d\"}"}}]}`, c, c, c),
			fmt.Sprintf(`{"role":"tool","tool_call_id":"call_%d","content":"src/%d/dates.py:12: def parse_date(s):\nsrc/%d/dates.py:40:     return parse_date(x)\n%s"}`, c, c, c, strings.Repeat("log line ", 20)))
	}
	msgs = append(msgs, fmt.Sprintf(`{"role":"assistant","content":"Done with issue %d."}`, i))
	return fmt.Sprintf(`{"session_id":%q,"model":"model-%d","messages":[%s]}`, id, i%7, strings.Join(msgs, ",")) + "\n"
}

// dataset writes n files of two conversations each (s<i>-a, s<i>-b),
// reused when present.
func dataset(name string, n int) string {
	dir := filepath.Join(*work, fmt.Sprintf("%s-%d", name, n))
	if _, err := os.Stat(dir + ".done"); err == nil {
		return dir
	}
	os.RemoveAll(dir)
	for i := 0; i < n; i++ {
		writeChat(dir, i)
	}
	check(os.WriteFile(dir+".done", nil, 0o644))
	return dir
}

func chatPath(dir string, i int) string {
	return filepath.Join(dir, fmt.Sprintf("d%03d", i%100), fmt.Sprintf("run-%06d.jsonl", i))
}

func writeChat(dir string, i int) {
	p := chatPath(dir, i)
	check(os.MkdirAll(filepath.Dir(p), 0o755))
	check(os.WriteFile(p, []byte(chat(fmt.Sprintf("s%d-a", i), i)+chat(fmt.Sprintf("s%d-b", i), i+1)), 0o644))
}

// server is a running `pchronicle serve`.
type server struct {
	url string
	cmd *exec.Cmd
}

func startServer(args ...string) *server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(*bin, append([]string{"serve", "--listen", addr, "--log-level", "warn"}, args...)...)
	cmd.Stderr = os.Stderr
	check(cmd.Start())
	s := &server{url: "http://" + addr, cmd: cmd}
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if res, err := http.Get(s.url + "/ready"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return s
			}
		}
		if time.Since(start) > 5*time.Minute {
			panic("the server did not become ready")
		}
	}
}

func (s *server) stop() {
	s.cmd.Process.Signal(os.Interrupt)
	s.cmd.Wait()
}

// answer is one decoded response.
type answer struct {
	status int
	body   map[string]any
	raw    []byte
	took   time.Duration
}

func (s *server) do(method, path string, body any) answer {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{status: -1, raw: []byte(err.Error()), took: time.Since(start)}
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	a := answer{status: res.StatusCode, raw: raw, took: time.Since(start)}
	json.Unmarshal(raw, &a.body)
	return a
}

func (s *server) query(sql string, extra map[string]any) answer {
	body := map[string]any{"sql": sql}
	for k, v := range extra {
		body[k] = v
	}
	return s.do("POST", "/api/query", body)
}

func must(a answer) answer {
	if a.status != 200 {
		panic(fmt.Sprintf("status %d: %s", a.status, a.raw))
	}
	return a
}

// pointQuery: a session_id point query over n sources, routed vs not.
func pointQuery(n int) {
	fmt.Printf("\n## routed point query on %d sources (HTTP, end to end)\n", n)
	s := startServer(dataset("ds", n))
	defer s.stop()
	start := time.Now()
	must(s.query("SELECT count(*) FROM steps", nil)) // resolves every source
	fmt.Printf("first aggregate (normalizes every file): %v\n", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	must(s.query("SELECT * FROM steps WHERE session_id = 's1-a'", nil)) // builds the runs layer
	fmt.Printf("first routed query (builds the runs index layer): %v\n", time.Since(start).Round(time.Millisecond))
	rng := rand.New(rand.NewPCG(1, 2))
	var routed, unrouted []time.Duration
	for i := 0; i < 60; i++ {
		sql := fmt.Sprintf("SELECT step_index, source, message_value FROM steps WHERE session_id = 's%d-a' ORDER BY step_index", rng.IntN(n))
		a := must(s.query(sql, nil))
		if a.body["source_routing"].(map[string]any)["outcome"] != "applied" {
			panic("not routed: " + string(a.raw))
		}
		b := must(s.query(sql, map[string]any{"routing": false}))
		if fmt.Sprint(a.body["rows"]) != fmt.Sprint(b.body["rows"]) {
			panic("routed and unrouted rows differ for " + sql)
		}
		if i >= 10 { // the first ones warm both paths
			routed = append(routed, a.took)
			unrouted = append(unrouted, b.took)
		}
	}
	rp, up := pct(routed, 50), pct(unrouted, 50)
	fmt.Printf("routed: p50 %v p99 %v; unrouted: p50 %v p99 %v; ratio %.1fx (goals: routed p50 <= 10ms, >= 20x)\n",
		ms(rp), ms(pct(routed, 99)), ms(up), ms(pct(unrouted, 99)), float64(up)/float64(rp))
}

// refresh: one of n files changes; refresh; the first aggregate after it
// vs the same aggregate on the old generation.
func refresh(n int) {
	fmt.Printf("\n## refresh after 1 of %d files changed, then the first aggregate\n", n)
	dir := dataset("refresh", n)
	s := startServer(dir)
	defer s.stop()
	const agg = "SELECT count(*), sum(step_count), sum(tool_call_count), sum(prompt_tokens) FROM runs"
	must(s.query(agg, nil))
	var old []time.Duration
	for i := 0; i < 5; i++ {
		old = append(old, must(s.query(agg, nil)).took)
	}
	var after, refreshes []time.Duration
	for round := 0; round < 5; round++ {
		writeChat(dir, round*7) // same size class, new mtime: a changed pin
		p := chatPath(dir, round*7)
		t := time.Now().Add(time.Duration(round+1) * time.Second)
		os.Chtimes(p, t, t)
		r := must(s.do("POST", "/api/catalog", nil))
		refreshes = append(refreshes, r.took)
		reused := r.body["refreshed"].(map[string]any)["reused_sources"].(float64)
		if int(reused) != n-1 {
			panic(fmt.Sprintf("refresh carried %v sources over, want %d", reused, n-1))
		}
		after = append(after, must(s.query(agg, nil)).took)
	}
	o, a := pct(old, 50), pct(after, 50)
	fmt.Printf("refresh (POST /api/catalog) p50 %v; aggregate on the old generation p50 %v; first aggregate after the refresh p50 %v; ratio %.2fx (goal <= 1.5x)\n",
		ms(pct(refreshes, 50)), ms(o), ms(a), float64(a)/float64(o))
}

// bigStoryline: pages of 100 steps of one 100,000-step Storyline.
func bigStoryline() {
	steps := 100000
	if *quick {
		steps = 10000
	}
	fmt.Printf("\n## a page of 100 steps of a %d-step Storyline\n", steps)
	dir := filepath.Join(*work, fmt.Sprintf("big-%d", steps))
	if _, err := os.Stat(filepath.Join(dir, "big.jsonl")); err != nil {
		check(os.MkdirAll(dir, 0o755))
		var b strings.Builder
		b.WriteString(`{"session_id":"big","messages":[{"role":"user","content":"start"}`)
		for i := 1; i < steps; i++ {
			if i%2 == 1 {
				fmt.Fprintf(&b, `,{"role":"assistant","content":"step %d","tool_calls":[{"id":"c%d","type":"function","function":{"name":"bash","arguments":"{\"cmd\":\"echo %d\"}"}}]}`, i, i, i)
			} else {
				fmt.Fprintf(&b, `,{"role":"tool","tool_call_id":"c%d","content":"output of step %d %s"}`, i-1, i, strings.Repeat("x", 200))
			}
		}
		b.WriteString("]}\n")
		check(os.WriteFile(filepath.Join(dir, "big.jsonl"), []byte(b.String()), 0o644))
	}
	s := startServer(dir)
	defer s.stop()
	start := time.Now()
	must(s.do("GET", "/api/storyline/steps?file=big.jsonl&session_id=big&limit=100", nil))
	fmt.Printf("first page (normalizes the file): %v\n", time.Since(start).Round(time.Millisecond))
	rng := rand.New(rand.NewPCG(3, 4))
	var heads, bodies []time.Duration
	for i := 0; i < 40; i++ {
		from := rng.IntN(steps - 100)
		a := must(s.do("GET", fmt.Sprintf("/api/storyline/steps?file=big.jsonl&session_id=big&from=%d&limit=100", from), nil))
		if got := len(a.body["steps"].([]any)); got != 100 {
			panic(fmt.Sprintf("page of %d steps", got))
		}
		heads = append(heads, a.took)
		bodies = append(bodies, must(s.do("GET", fmt.Sprintf("/api/storyline/bodies?file=big.jsonl&session_id=big&from=%d&limit=100", from), nil)).took)
	}
	fmt.Printf("100 step headers: p50 %v p99 %v; 100 steps with bodies: p50 %v p99 %v (goal <= 50ms)\n",
		ms(pct(heads, 50)), ms(pct(heads, 99)), ms(pct(bodies, 50)), ms(pct(bodies, 99)))
}

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	i := (len(s)*p + 99) / 100
	return s[min(max(i-1, 0), len(s)-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
