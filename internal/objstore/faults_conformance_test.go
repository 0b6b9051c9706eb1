package objstore_test

// The fault section of the conformance suite: each remote backend talks to
// its real test server through a fault-injecting proxy (internal/objstore/
// faults). Transient faults must be retried or resumed and end with exactly
// the pinned bytes; persistent ones must end, within a bounded time and
// number of requests, in an *objstore.Error naming the object, with nothing
// left at the destination; a change of the object mid-read must fail (or,
// on a versioned bucket, still give the pinned version), never mix versions.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/objstore/faults"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// fastRetry keeps the faulted tests short: small backoffs, and timeouts
// long enough that a loaded machine does not trip them by accident.
var fastRetry = objstore.Retry{Attempts: 3, BaseDelay: 20 * time.Millisecond, MaxDelay: 200 * time.Millisecond,
	ResponseTimeout: 5 * time.Second, StallTimeout: 5 * time.Second, ReadRequests: 8}

// timeoutRetry is fastRetry with one-second timeouts, for transient
// timeout faults: each timed-out attempt costs a timeout, and a third
// attempt absorbs a real answer that a loaded machine makes late.
var timeoutRetry = func() objstore.Retry {
	r := fastRetry
	r.Attempts, r.ResponseTimeout, r.StallTimeout, r.ReadRequests = 3, time.Second, time.Second, 6
	return r
}()

// giveUpRetry is timeoutRetry with two attempts and three requests per
// read (GCS spends one on its stat), for persistent timeout faults: every
// attempt times out anyway.
var giveUpRetry = func() objstore.Retry {
	r := timeoutRetry
	r.Attempts, r.ReadRequests = 2, 3
	return r
}()

// hang is well beyond the timeouts: a request or body held this long has
// timed out on the client (the proxy stops holding when the client goes).
const hang = 3 * time.Second

const (
	bigKey  = "big.bin"
	bigSize = objstore.ChunkSize + objstore.ChunkSize/2 + 123
	cut     = objstore.ChunkSize + 17 // inside the second chunk of a download
)

// version returns the bytes of version v of the big object: versions have
// the same size and differ at every offset, so a mix of two is neither.
func version(v int) []byte {
	b := make([]byte, bigSize)
	for i := range b {
		b[i] = byte((i + v) % 251)
	}
	return b
}

// faultEnv is a fresh bucket seen directly and through a proxy.
type faultEnv struct {
	be     backend
	name   string
	direct objstore.Bucket
	proxy  *faults.Proxy
}

func newFaultEnv(t *testing.T, be backend) *faultEnv {
	name := be.create(t)
	return &faultEnv{be: be, name: name, direct: be.open(t, name, nil), proxy: be.proxy(t)}
}

// through opens the bucket via the proxy with retry bounds r.
func (e *faultEnv) through(t *testing.T, r objstore.Retry, pageSize int) objstore.Bucket {
	return e.be.open(t, e.name, func(c *objstore.Config) {
		c.Endpoint, c.Retry, c.PageSize = e.proxy.URL, r, pageSize
	})
}

// putBig writes version v of the big object directly and returns its pin.
func (e *faultEnv) putBig(t *testing.T, v int) objstore.ObjectInfo {
	t.Helper()
	data := version(v)
	if _, err := e.direct.Put(ctx, bigKey, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	return list(t, e.direct, bigKey)[0]
}

func (e *faultEnv) reads() []faults.Request { return e.proxy.Requests(faults.ObjectRead(bigKey)) }

// download runs objstore.Download into a fresh directory and returns the
// bytes at the destination (nil when there is no file), the other entries
// left in the directory, the error and the time it took.
func download(t *testing.T, b objstore.Bucket, pin objstore.ObjectInfo) (data []byte, leftovers []string, err error, took time.Duration) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "snap")
	dst := filepath.Join(dir, "obj.bin")
	start := time.Now()
	err = objstore.Download(ctx, b, pin, dst)
	took = time.Since(start)
	data, _ = os.ReadFile(dst)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "obj.bin" {
			leftovers = append(leftovers, e.Name())
		}
	}
	return data, leftovers, err, took
}

// rangeStart is the first byte a read request asks for (Range, or Azure's
// x-ms-range): 0 for the whole object, -1 for a header it cannot parse.
func rangeStart(r *http.Request) int64 {
	h := r.Header.Get("Range")
	if h == "" {
		h = r.Header.Get("x-ms-range")
	}
	if h == "" {
		return 0
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(h, "bytes="), "-")
	n, err := strconv.ParseInt(first, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// carriesPin reports whether a read request is conditioned on pin: its
// version id, its generation, or If-Match its ETag.
func carriesPin(r *http.Request, pin objstore.ObjectInfo) bool {
	q := r.URL.Query()
	switch {
	case pin.VersionID != "":
		return q.Get("versionId") == pin.VersionID
	case pin.Generation != 0:
		return q.Get("generation") == strconv.FormatInt(pin.Generation, 10)
	default:
		return strings.Trim(r.Header.Get("If-Match"), `"`) == strings.Trim(pin.ETag, `"`)
	}
}

// testFaults runs every case at once, each with its own bucket and proxy:
// they spend their time waiting out timeouts and backoffs.
func testFaults(t *testing.T, be backend) {
	g := testutil.Together(t)
	defer g.Wait()
	g.Run("TransientReadFaults", func(t *testing.T) { testTransientReadFaults(t, be) })
	g.Run("PersistentReadFaults", func(t *testing.T) { testPersistentReadFaults(t, be) })
	g.Run("ChangeMidRead", func(t *testing.T) { testChangeMidRead(t, be) })
	g.Run("ListingFaults", func(t *testing.T) { testListingFaults(t, be) })
	g.Run("StatAndPutRetry", func(t *testing.T) { testStatAndPutRetry(t, be) })
}

func testTransientReadFaults(t *testing.T, be backend) {
	g := testutil.Together(t)
	defer g.Wait()
	read := faults.ObjectRead(bigKey)
	patient := fastRetry
	patient.MaxDelay = 2 * time.Second // waits out a Retry-After of 1s
	for _, tc := range []struct {
		name    string
		retry   objstore.Retry
		rules   []faults.Rule
		reads   int           // requests for the object's bytes, retries and resumptions included
		resumed bool          // the last one resumed the body where it failed
		exact   bool          // ... exactly at the cut
		minGap  time.Duration // between the first two reads, when the SDK honours Retry-After
	}{
		{"two 503s then a reset", fastRetry, []faults.Rule{
			{Match: read, Times: 2, Fault: faults.Status(http.StatusServiceUnavailable)},
			{Match: read, Times: 1, Fault: faults.Reset(cut)},
		}, 4, true, false, 0},
		{"a 500 then a truncated body", fastRetry, []faults.Rule{
			{Match: read, Times: 1, Fault: faults.Status(http.StatusInternalServerError)},
			{Match: read, Times: 1, Fault: faults.Truncate(cut)},
		}, 3, true, true, 0},
		{"a timeout then a stalled body", timeoutRetry, []faults.Rule{
			{Match: read, Times: 1, Fault: faults.Delay(hang)},
			{Match: read, Times: 1, Fault: faults.Stall(cut, hang)},
		}, 3, true, true, 0},
		{"a 503 with Retry-After", patient, []faults.Rule{
			{Match: read, Times: 1, Fault: faults.StatusRetryAfter(http.StatusServiceUnavailable, "1")},
		}, 2, false, false, time.Second},
	} {
		g.Run(tc.name, func(t *testing.T) {
			e := newFaultEnv(t, be)
			pin := e.putBig(t, 1)
			for _, r := range tc.rules {
				e.proxy.Add(r)
			}
			data, leftovers, err, took := download(t, e.through(t, tc.retry, 0), pin)
			if err != nil || !bytes.Equal(data, version(1)) || leftovers != nil {
				t.Fatalf("download: %v; %d bytes, pinned bytes: %v, leftovers %v\n%s", err, len(data), bytes.Equal(data, version(1)), leftovers, e.proxy.Log())
			}
			reads := e.reads()
			slack := 0
			if tc.retry.ResponseTimeout == timeoutRetry.ResponseTimeout {
				slack = 1 // a loaded machine may let one real answer time out too
			}
			if len(reads) < tc.reads || len(reads) > tc.reads+slack {
				t.Fatalf("%d reads, want %d\n%s", len(reads), tc.reads, e.proxy.Log())
			}
			for _, r := range reads {
				if !carriesPin(r.Req, pin) {
					t.Errorf("a read without the pin's condition: %s %s", r.Req.URL, r.Req.Header)
				}
			}
			// A cut by FIN or a stall delivers every byte before it, so the
			// resumption starts at the cut; a reset may drop bytes the client
			// had not consumed yet, so it starts at or before it.
			if from := rangeStart(reads[len(reads)-1].Req); tc.resumed && (from <= 0 || from > cut || (tc.exact && from != cut)) {
				t.Errorf("the last read starts at %d, want %d (resume where the body failed)\n%s", from, cut, e.proxy.Log())
			}
			if gap := reads[1].At.Sub(reads[0].At); be.honorsRetryAfter && gap < tc.minGap {
				t.Errorf("retried after %s; the server asked for %s", gap, tc.minGap)
			}
			t.Logf("%d reads in %s", len(reads), took.Round(time.Millisecond))
		})
	}
}

func testPersistentReadFaults(t *testing.T, be backend) {
	g := testutil.Together(t)
	defer g.Wait()
	read := faults.ObjectRead(bigKey)
	retryAfterReads := fastRetry.Attempts
	if be.honorsRetryAfter {
		retryAfterReads = 1 // asked to wait longer than MaxDelay: no retry
	}
	stallRetry := giveUpRetry
	stallRetry.ReadRequests = 2 // each stalled body costs a StallTimeout (GCS: its stat and one)
	for _, tc := range []struct {
		name     string
		retry    objstore.Retry
		fault    faults.Fault
		minReads int // requests for the object's bytes
		maxReads int
		says     string // in the error
		within   time.Duration
	}{
		{"503", fastRetry, faults.Status(http.StatusServiceUnavailable), fastRetry.Attempts, fastRetry.Attempts, "503", 8 * time.Second},
		{"500 with a long Retry-After", fastRetry, faults.StatusRetryAfter(http.StatusInternalServerError, "3600"), retryAfterReads, retryAfterReads, "500", 8 * time.Second},
		// Each resumption makes a little progress; the budget ends the read.
		{"reset mid-body", fastRetry, faults.Reset(1000), fastRetry.ReadRequests - 1, fastRetry.ReadRequests, "gave up after 8 requests", 8 * time.Second},
		{"truncated body", fastRetry, faults.Truncate(1000), fastRetry.ReadRequests - 1, fastRetry.ReadRequests, "gave up after 8 requests", 8 * time.Second},
		{"no response", giveUpRetry, faults.Delay(hang), giveUpRetry.Attempts, giveUpRetry.Attempts, "no response headers within " + giveUpRetry.ResponseTimeout.String(), 10 * time.Second},
		{"stalled body", stallRetry, faults.Stall(1000, hang), 1, stallRetry.ReadRequests, "response body stalled within " + stallRetry.StallTimeout.String(), 10 * time.Second},
	} {
		g.Run(tc.name, func(t *testing.T) {
			e := newFaultEnv(t, be)
			pin := e.putBig(t, 1)
			e.proxy.Add(faults.Rule{Match: read, Times: faults.Always, Fault: tc.fault})
			b := e.through(t, tc.retry, 0)
			data, leftovers, err, took := download(t, b, pin)
			if err == nil || data != nil || leftovers != nil {
				t.Fatalf("download under a persistent fault: %v; %d bytes at the destination, leftovers %v", err, len(data), leftovers)
			}
			var oe *objstore.Error
			uri := b.String() + "/" + bigKey
			if !errors.As(err, &oe) || oe.URI != uri || oe.Op != "read" || !strings.Contains(err.Error(), uri) {
				t.Fatalf("error %q (%T) does not name read %s", err, err, uri)
			}
			if !strings.Contains(err.Error(), tc.says) || errors.Is(err, objstore.ErrChanged) {
				t.Errorf("error %q does not say %q (or claims a change)", err, tc.says)
			}
			if n := len(e.reads()); n < tc.minReads || n > tc.maxReads {
				t.Errorf("%d reads, want %d to %d\n%s", n, tc.minReads, tc.maxReads, e.proxy.Log())
			}
			if took > tc.within {
				t.Errorf("gave up after %s, want within %s", took, tc.within)
			}
			t.Logf("%s after %s: %v", tc.name, took.Round(time.Millisecond), err)
		})
	}
}

// testChangeMidRead writes a new version of the object through the real
// server while a read is half-way, then breaks the connection: the
// resumption must not splice the new bytes onto the old ones.
func testChangeMidRead(t *testing.T, be backend) {
	e := newFaultEnv(t, be)
	pin := e.putBig(t, 1)
	overwrite := func() { // runs on the proxy's goroutine: no t.Fatal
		v2 := version(2)
		if _, err := e.direct.Put(ctx, bigKey, bytes.NewReader(v2), int64(len(v2))); err != nil {
			t.Errorf("overwrite: %v", err)
		}
	}
	e.proxy.Add(faults.Rule{Match: faults.ObjectRead(bigKey), Times: 1, Fault: faults.Reset(cut).Then(overwrite)})
	data, leftovers, err, _ := download(t, e.through(t, fastRetry, 0), pin)
	if leftovers != nil {
		t.Fatalf("leftovers %v", leftovers)
	}
	if be.keepsVersions {
		if err != nil || !bytes.Equal(data, version(1)) {
			t.Fatalf("versioned read across an overwrite: %v, pinned bytes %v; want exactly the pinned version", err, bytes.Equal(data, version(1)))
		}
		return
	}
	var ce *objstore.ChangedError
	if !errors.As(err, &ce) || ce.Pinned.Key != bigKey || data != nil {
		t.Fatalf("read across an overwrite: %v (%T), %d bytes at the destination; want a *ChangedError and no file\n%s", err, err, len(data), e.proxy.Log())
	}
	t.Logf("%v", err)
}

func testListingFaults(t *testing.T, be backend) {
	g := testutil.Together(t)
	defer g.Wait()
	// listEnv is a bucket of 7 keys under l/ and their direct listing.
	listEnv := func(t *testing.T) (*faultEnv, []objstore.ObjectInfo) {
		e := newFaultEnv(t, be)
		var want []string
		for i := range 7 {
			k := fmt.Sprintf("l/%02d.json", i)
			put(t, e.direct, k, "{}")
			want = append(want, k)
		}
		direct := list(t, e.direct, "l/")
		if !equal(keys(direct), want) {
			t.Fatalf("direct listing: %v", keys(direct))
		}
		return e, direct
	}
	listAll := func(b objstore.Bucket) ([]objstore.ObjectInfo, error, time.Duration) {
		var got []objstore.ObjectInfo
		start := time.Now()
		err := b.List(ctx, "l/", func(o objstore.ObjectInfo) error { got = append(got, o); return nil })
		return got, err, time.Since(start)
	}
	g.Run("transient", func(t *testing.T) {
		e, direct := listEnv(t)
		e.proxy.Add(faults.Rule{Match: faults.List, Skip: 1, Times: 1, Fault: faults.Status(http.StatusServiceUnavailable)})
		e.proxy.Add(faults.Rule{Match: faults.List, Skip: 2, Times: 1, Fault: faults.Delay(hang)})
		got, err, _ := listAll(e.through(t, timeoutRetry, 2))
		if err != nil || fmt.Sprint(got) != fmt.Sprint(direct) {
			t.Fatalf("listing with a 503 and a slow page: %v\n got %v\nwant %v\n%s", err, got, direct, e.proxy.Log())
		}
	})
	for _, tc := range []struct {
		name  string
		fault faults.Fault
		says  string
	}{
		{"failing", faults.Status(http.StatusServiceUnavailable), "503"},
		{"slow", faults.Delay(hang), "no response headers within " + giveUpRetry.ResponseTimeout.String()},
	} {
		g.Run(tc.name, func(t *testing.T) {
			e, _ := listEnv(t)
			e.proxy.Add(faults.Rule{Match: faults.List, Skip: 1, Times: faults.Always, Fault: tc.fault})
			before := e.proxy.Count(faults.List)
			b := e.through(t, giveUpRetry, 2)
			got, err, took := listAll(b)
			var oe *objstore.Error
			if !errors.As(err, &oe) || !strings.Contains(oe.Op, "list") || oe.URI != b.String()+"/l/" || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("%s listing: %v (%T) after %d entries; want an *objstore.Error for %s/l/ saying %q", tc.name, err, err, len(got), b, tc.says)
			}
			// The first page (perhaps twice, if its real answer is late),
			// then the second one tried Attempts times.
			if n := e.proxy.Count(faults.List) - before; n < 1+giveUpRetry.Attempts || n > 2+giveUpRetry.Attempts || took > 10*time.Second {
				t.Errorf("%d list requests in %s, want %d within 10s\n%s", n, took, 1+giveUpRetry.Attempts, e.proxy.Log())
			}
		})
	}
}

func testStatAndPutRetry(t *testing.T, be backend) {
	e := newFaultEnv(t, be)
	put(t, e.direct, "s.json", `{"a":1}`)
	put(t, e.direct, "taken.json", "theirs")
	e.proxy.Add(faults.Rule{Match: faults.ObjectRequest("s.json"), Times: 1, Fault: faults.Status(http.StatusServiceUnavailable)})
	e.proxy.Add(faults.Rule{Match: faults.ObjectWrite("p.json"), Times: 1, Fault: faults.Status(http.StatusInternalServerError)})
	// The server takes these puts but their answers are lost: the retry is
	// refused by the put's own first write.
	e.proxy.Add(faults.Rule{Match: faults.ObjectWrite("lost.json"), Times: 1, Fault: faults.Drop()})
	e.proxy.Add(faults.Rule{Match: faults.ObjectWrite("CURRENT"), Skip: 1, Times: 1, Fault: faults.Drop()}) // the PutIfMatch
	e.proxy.Add(faults.Rule{Match: faults.ObjectWrite("taken.json"), Times: 1, Fault: faults.Drop()})
	b := e.through(t, fastRetry, 0)
	cp := b.(objstore.ConditionalPutter)
	if st, err := b.Stat(ctx, "s.json"); err != nil || st.Size != 7 {
		t.Fatalf("stat after a 503: %+v %v", st, err)
	}
	body := func(s string) (io.Reader, int64) { return strings.NewReader(s), int64(len(s)) }
	r, n := body("{}")
	if _, err := cp.PutIfAbsent(ctx, "p.json", r, n); err != nil {
		t.Fatalf("put if absent after a 500: %v\n%s", err, e.proxy.Log())
	}
	r, n = body("mine")
	if info, err := cp.PutIfAbsent(ctx, "lost.json", r, n); err != nil || info.Size != 4 {
		t.Fatalf("put if absent whose answer was lost: %+v %v; want success, the object is ours\n%s", info, err, e.proxy.Log())
	}
	r, n = body("gen-1")
	first, err := cp.PutIfAbsent(ctx, "CURRENT", r, n)
	if err != nil {
		t.Fatal(err)
	}
	r, n = body("gen-2")
	if _, err := cp.PutIfMatch(ctx, first, r, n); err != nil {
		t.Fatalf("put if match whose first answer was lost: %v; want success\n%s", err, e.proxy.Log())
	}
	r, n = body("mine")
	if _, err := cp.PutIfAbsent(ctx, "taken.json", r, n); !errors.Is(err, objstore.ErrPrecondition) {
		t.Fatalf("put if absent over another writer's object, answer lost: %v; want ErrPrecondition", err)
	}
	for key, want := range map[string]string{"p.json": "{}", "lost.json": "mine", "CURRENT": "gen-2", "taken.json": "theirs"} {
		if got, err := readAll(e.direct, list(t, e.direct, key)[0]); err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", key, got, err, want)
		}
	}
}
