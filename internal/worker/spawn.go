package worker

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/pchronicle/pchronicle/internal/childproc"
	"github.com/pchronicle/pchronicle/internal/engine/spawn"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/redact"
)

// ErrUnavailable: the worker did not answer in time (it was killed) or
// failed before answering. The parent answers 503.
var ErrUnavailable = errors.New("the query worker is unavailable")

// ErrBusy: MaxRunning workers are answering and MaxQueued jobs already
// wait for one of them. The parent answers 503 with Retry-After.
var ErrBusy = errors.New("every query worker is busy; retry shortly")

// DefaultTimeout bounds one worker's whole run, answer included.
const DefaultTimeout = 60 * time.Second

// WrapperEnv is a test hook of serve (docs/testing.md): when the serving
// parent's environment names a program in it, workers start as that
// program followed by the real command (PROGRAM EXE serve
// --catalog-query-worker). The end-to-end tests point it at a script that
// records what a worker receives before it execs the worker, so a test can
// read the real stdin of the real binary. Its prefix is sanitized, so no
// worker (or wrapper) sees the variable itself.
const WrapperEnv = "PCHRONICLE_CATALOG_TEST_WORKER_WRAPPER"

// Spawner starts workers: each Run gets a process of its own that serves
// that one job and exits. With Warm > 0 it keeps that many workers started
// ahead; they hold nothing but the sanitized environment until a job
// reaches them, so a warm worker is as isolated as a cold one.
type Spawner struct {
	Path    string        // the binary (os.Executable() of serve)
	Args    []string      // nil: Args
	Env     []string      // the environment to start from (nil: os.Environ()); always passed through Environ
	Timeout time.Duration // 0: DefaultTimeout
	Warm    int           // workers kept started ahead; 0 starts one per job
	Log     *slog.Logger  // worker stderr and failures (scrubbed of the job's keys); nil: slog.Default()
	// MaxRunning bounds the workers answering at once (each runs its own
	// DuckDB instances); 0 is no bound. MaxQueued jobs may wait for one,
	// within the Timeout; beyond that Run fails with ErrBusy.
	MaxRunning, MaxQueued int

	mu      sync.Mutex
	ready   []*proc
	filler  bool // a goroutine is topping up ready
	closed  bool
	slots   chan struct{} // one token per running job, when MaxRunning > 0
	waiting int           // jobs waiting for a slot
}

// proc is one started worker.
type proc struct {
	cmd *exec.Cmd
	// tmp is the worker's own temp directory (its TMPDIR): its Snapshot's
	// normalized rows and its DuckDB's spill land there, and the parent
	// removes it as soon as the worker has exited, killed or not.
	tmp    string
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *childproc.CappedBuffer
	exited chan struct{} // closed when Wait returned
	werr   error
}

func (s *Spawner) start() (*proc, error) {
	args := s.Args
	if args == nil {
		args = Args
	}
	env := s.Env
	if env == nil {
		env = os.Environ()
	}
	tmp, err := os.MkdirTemp("", "pchronicle-worker-")
	if err != nil {
		return nil, fmt.Errorf("start the query worker: %w", err)
	}
	cmd := exec.Command(s.Path, args...)
	cmd.Env = append(Environ(env), "TMPDIR="+tmp)
	// A worker and its DuckDB children die with the parent, kill -9 included.
	cmd.SysProcAttr = spawn.DieWithParent()
	p := &proc{cmd: cmd, tmp: tmp, stderr: &childproc.CappedBuffer{Max: 64 << 10}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if p.stdin, p.stdout, err = childproc.Start(cmd); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("start the query worker: %w", err)
	}
	go func() {
		p.werr = cmd.Wait()
		// Whatever the worker left (a killed one cleans nothing up) goes
		// before anyone learns that it exited.
		os.RemoveAll(tmp)
		close(p.exited)
	}()
	return p, nil
}

// take returns a warm worker that is still alive, or starts one.
func (s *Spawner) take() (*proc, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: the server is shutting down", ErrUnavailable)
	}
	var p *proc
	for len(s.ready) > 0 && p == nil {
		p, s.ready = s.ready[0], s.ready[1:]
		select {
		case <-p.exited: // died while waiting (killed from outside)
			p = nil
		default:
		}
	}
	if s.Warm > 0 && !s.filler {
		s.filler = true
		go s.fill()
	}
	s.mu.Unlock()
	if p != nil {
		return p, nil
	}
	return s.start()
}

// fill tops the warm set up to Warm, one start at a time.
func (s *Spawner) fill() {
	for {
		s.mu.Lock()
		if s.closed || len(s.ready) >= s.Warm {
			s.filler = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		p, err := s.start()
		s.mu.Lock()
		if err != nil || s.closed {
			s.filler = false
			s.mu.Unlock()
			if err != nil {
				s.log().Warn("could not start a warm query worker", "error", err.Error())
			} else {
				p.stdin.Close() // no job: it exits
			}
			return
		}
		s.ready = append(s.ready, p)
		s.mu.Unlock()
	}
}

// Prestart starts the warm workers now rather than on the first job.
func (s *Spawner) Prestart() {
	if s.Warm <= 0 {
		return
	}
	s.mu.Lock()
	if !s.filler && !s.closed {
		s.filler = true
		go s.fill()
	}
	s.mu.Unlock()
}

// Close stops the warm workers (their stdin closes without a job, so they
// exit) and refuses new jobs; running jobs finish.
func (s *Spawner) Close() {
	s.mu.Lock()
	s.closed = true
	ready := s.ready
	s.ready = nil
	s.mu.Unlock()
	for _, p := range ready {
		p.stdin.Close()
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
			p.cmd.Process.Kill()
		}
	}
}

func (s *Spawner) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// Result is a worker's answer: the Head, and the body streaming from the
// worker's stdout. Close it (Respond does): it waits for the worker to exit
// and reports ErrUnavailable if the answer was cut short.
type Result struct {
	Head
	Body io.ReadCloser
}

// Run gives job to a worker and returns its answer once the Head line
// arrived. ctx and the timeout both bound the whole run; when either ends
// it, the worker is killed and the error (now or from the body) wraps
// ErrUnavailable. Nothing of the job is ever logged.
func (s *Spawner) Run(ctx context.Context, job Job) (*Result, error) {
	job.V = Version
	data, err := jsonx.Marshal(job)
	if err != nil {
		return nil, fmt.Errorf("encode the job: %w", err)
	}
	if len(data) > MaxJobBytes {
		return nil, fmt.Errorf("the job is larger than %d bytes", MaxJobBytes)
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	release, err := s.acquire(ctx, timeout)
	if err != nil {
		return nil, err
	}
	p, err := s.take()
	if err != nil {
		release()
		return nil, err
	}
	r := &run{s: s, p: p, secrets: secretsOf(job), requestID: job.RequestID, done: make(chan struct{}), release: release}
	go r.watch(ctx, timeout)
	go func() {
		// A worker that dies early closes the pipe; its error shows as a
		// missing Head below.
		p.stdin.Write(data)
		p.stdin.Close()
	}()
	br := bufio.NewReaderSize(p.stdout, 32<<10)
	head, err := readHead(br)
	if err != nil {
		return nil, r.finish(fmt.Errorf("%w: %v", ErrUnavailable, err))
	}
	return &Result{Head: head, Body: &body{r: br, run: r}}, nil
}

// acquire takes a running slot, waiting in the bounded queue for at most
// timeout, and returns its release.
func (s *Spawner) acquire(ctx context.Context, timeout time.Duration) (func(), error) {
	if s.MaxRunning <= 0 {
		return func() {}, nil
	}
	s.mu.Lock()
	if s.slots == nil {
		s.slots = make(chan struct{}, s.MaxRunning)
	}
	slots := s.slots
	release := func() { <-slots }
	select {
	case slots <- struct{}{}:
		s.mu.Unlock()
		return release, nil
	default:
	}
	if s.waiting >= s.MaxQueued {
		s.mu.Unlock()
		return nil, ErrBusy
	}
	s.waiting++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.waiting--
		s.mu.Unlock()
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case slots <- struct{}{}:
		return release, nil
	case <-t.C:
		return nil, ErrBusy
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, ctx.Err())
	}
}

// readHead reads and checks the Head line of a worker's answer.
func readHead(br *bufio.Reader) (Head, error) {
	line, err := readLine(br, maxHeadBytes)
	if err != nil {
		return Head{}, fmt.Errorf("no answer (%v)", err)
	}
	var head Head
	if err := jsonx.Unmarshal(line, &head); err != nil || head.Status < 200 || head.Status > 599 {
		return Head{}, errors.New("a malformed answer header")
	}
	return head, nil
}

// run is one job's worker from hand-over to exit.
type run struct {
	s         *Spawner
	p         *proc
	secrets   []string
	requestID string
	done      chan struct{} // closed by finish
	release   func()        // the running slot, given back by finish
	once      sync.Once
	mu        sync.Mutex
	killedBy  error // set when watch killed the worker
}

// watch kills the worker when the timeout passes or ctx ends first.
func (r *run) watch(ctx context.Context, timeout time.Duration) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	var why error
	select {
	case <-r.done:
		return
	case <-r.p.exited:
		return
	case <-t.C:
		why = fmt.Errorf("%w: no complete answer within %s", ErrUnavailable, timeout)
	case <-ctx.Done():
		why = fmt.Errorf("%w: %v", ErrUnavailable, ctx.Err())
	}
	r.mu.Lock()
	r.killedBy = why
	r.mu.Unlock()
	r.p.cmd.Process.Kill()
}

// finish waits for the worker to exit and returns the run's outcome: the
// kill reason, else cause, else a failed exit. The worker's stderr is
// logged scrubbed of the job's keys.
func (r *run) finish(cause error) error {
	var err error
	r.once.Do(func() {
		r.p.stdout.Close() // a worker still writing gets EPIPE and ends
		select {
		case <-r.p.exited:
		case <-time.After(5 * time.Second):
			r.p.cmd.Process.Kill()
			<-r.p.exited
		}
		close(r.done)
		r.release()
		r.mu.Lock()
		killed := r.killedBy
		r.mu.Unlock()
		switch {
		case killed != nil:
			err = killed
		case cause != nil:
			err = cause
		case r.p.werr != nil:
			err = fmt.Errorf("%w: the worker failed: %v", ErrUnavailable, r.p.werr)
		}
		if msg := strings.TrimSpace(r.scrub(r.p.stderr.String())); msg != "" || err != nil {
			attrs := []any{"request_id", r.requestID, "stderr", msg}
			if err != nil {
				attrs = append(attrs, "error", r.scrub(err.Error()))
			}
			r.s.log().Warn("query worker", attrs...)
		}
	})
	return err
}

func (r *run) scrub(s string) string {
	for _, secret := range r.secrets {
		s = strings.ReplaceAll(s, secret, redact.Mark)
	}
	return redact.Text(s)
}

// secretsOf lists the job's keys that must not reach a log.
func secretsOf(job Job) []string {
	var out []string
	for _, m := range job.Mounts {
		for _, v := range []string{m.AccessKey, m.SecretKey.Reveal()} {
			if len(v) >= 4 {
				out = append(out, v)
			}
		}
	}
	return out
}

// body streams a worker's answer; Close ends the run.
type body struct {
	r   *bufio.Reader
	run *run
	err error
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

func (b *body) Close() error {
	// Drain what the worker still writes so that it can exit normally.
	if b.err == nil {
		io.Copy(io.Discard, b.r)
	}
	return b.run.finish(nil)
}

// Respond relays the answer to w, flushing as the body arrives, and closes
// it. An error after the status was sent can only cut the body short; it is
// returned for the log.
func (res *Result) Respond(w http.ResponseWriter) error {
	h := w.Header()
	for k, vs := range res.Header {
		h[k] = vs
	}
	for _, k := range hopByHop {
		h.Del(k)
	}
	if res.ContentType != "" {
		h.Set("Content-Type", res.ContentType)
	}
	w.WriteHeader(res.Status)
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	var werr error
	for {
		n, err := res.Body.Read(buf)
		if n > 0 && werr == nil {
			if _, werr = w.Write(buf[:n]); werr == nil && flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil {
			break
		}
	}
	return errors.Join(werr, res.Body.Close())
}

// readLine reads one '\n'-terminated line of at most max bytes.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > max {
			return nil, fmt.Errorf("the first line is longer than %d bytes", max)
		}
		switch {
		case err == nil:
			return bytes.TrimSuffix(line, []byte("\n")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}
