package objstore

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
)

// GCS is a Bucket on Google Cloud Storage, spoken to over the JSON API with
// plain net/http: the storage SDK links grpc, protobuf descriptors and
// telemetry into every process, which costs each pchronicle process (and
// each query worker) megabytes and milliseconds at start. Pins are
// generations. A pinned read first compares the live generation
// (fake-gcs-server ignores generation preconditions, so the check cannot be
// left to the server), then reads that exact generation and checks the
// generation it got.
type GCS struct {
	remoteBase
	client       *http.Client
	bucket       string
	api, upload  string // JSON API and upload base URLs, without a trailing '/'
	quotaProject string // X-Goog-User-Project, as the SDK sent it
	page         int
}

// gcsScopes are the scopes storage.NewClient asked for.
var gcsScopes = []string{"https://www.googleapis.com/auth/devstorage.full_control", "https://www.googleapis.com/auth/cloud-platform"}

// gcsObjectFields is the part of an object resource the backend uses.
const gcsObjectFields = "name,size,updated,etag,generation"

// NewGCS connects bucket with Application Default Credentials, or, when
// cfg.Endpoint names an emulator such as fake-gcs-server, without
// authentication at that endpoint.
func NewGCS(ctx context.Context, name string, cfg Config) (*GCS, error) {
	b := &GCS{remoteBase: newRemoteBase("gs://"+name, cfg), bucket: name, page: cfg.PageSize}
	var rt http.RoundTripper = newTransport(cfg, b.retry)
	root := "https://storage.googleapis.com"
	if cfg.Endpoint != "" {
		root = strings.TrimSuffix(strings.TrimRight(cfg.Endpoint, "/"), "/storage/v1")
	} else {
		// The token source keeps this context for its refreshes: they must
		// outlive the caller's.
		creds, err := google.FindDefaultCredentials(context.WithoutCancel(ctx), gcsScopes...)
		if err != nil {
			return nil, b.err(ctx, "connect", "", err)
		}
		var file struct {
			QuotaProject   string `json:"quota_project_id"`
			UniverseDomain string `json:"universe_domain"`
		}
		_ = json.Unmarshal(creds.JSON, &file) // metadata-server credentials have no JSON
		b.quotaProject = file.QuotaProject
		if env := os.Getenv("GOOGLE_CLOUD_QUOTA_PROJECT"); env != "" {
			b.quotaProject = env
		}
		if file.UniverseDomain != "" && file.UniverseDomain != "googleapis.com" {
			root = "https://storage." + file.UniverseDomain
		}
		// Authentication goes on top of our transport (timeouts, tallies).
		rt = &oauth2.Transport{Source: creds.TokenSource, Base: rt}
	}
	b.api, b.upload = root+"/storage/v1", root+"/upload/storage/v1"
	b.client = &http.Client{Transport: rt}
	return b, nil
}

func (b *GCS) Close() error { return nil }

func (b *GCS) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	ctx, _ = track(ctx, 0)
	q := url.Values{"fields": {"nextPageToken,items(" + gcsObjectFields + ")"}, "prettyPrint": {"false"}}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	if b.page > 0 {
		q.Set("maxResults", strconv.Itoa(b.page))
	}
	for {
		var page gcsList
		err := b.do(ctx, func() (*http.Request, error) {
			return b.request(ctx, http.MethodGet, b.api+"/b/"+gcsEscape(b.bucket)+"/o?"+q.Encode(), nil, 0)
		}, func(resp *http.Response) (err error) {
			page, err = decodeGCS(resp, parseGCSList)
			return err
		})
		if err != nil {
			return b.err(ctx, "list", prefix, err)
		}
		for _, o := range page.Items {
			if err := fn(o.info()); err != nil {
				return err
			}
		}
		if page.NextPageToken == "" {
			return nil
		}
		q.Set("pageToken", page.NextPageToken)
	}
}

func (b *GCS) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if tallyFrom(ctx) == nil { // a pinned read's stat counts against its budget
		ctx, _ = track(ctx, 0)
	}
	// alt=json tells a stat from a read of the bytes (faults.ObjectRead).
	u := b.objectURL(key, url.Values{"alt": {"json"}, "fields": {gcsObjectFields}, "prettyPrint": {"false"}})
	var obj gcsObject
	err := b.do(ctx, func() (*http.Request, error) {
		return b.request(ctx, http.MethodGet, u, nil, 0)
	}, func(resp *http.Response) (err error) {
		obj, err = decodeGCS(resp, parseGCSObject)
		return err
	})
	if err != nil {
		return ObjectInfo{}, b.err(ctx, "stat", key, err)
	}
	return obj.info(), nil
}

// ReadPinned compares the live generation first (fake-gcs-server serves a
// stale generation precondition), then reads exactly the pinned generation;
// a resumption asks for that generation from its offset. Like the SDK, a
// read whose first answer carries the object's CRC32C checks it at EOF.
func (b *GCS) ReadPinned(ctx context.Context, pin ObjectInfo) (io.ReadCloser, error) {
	fail := func(ctx context.Context, err error) error { return b.err(ctx, "read", pin.Key, err) }
	// A weak pin (no generation) resumes with the generation its first
	// answer served, as the SDK did, so a resumption cannot splice versions.
	gen := pin.Generation
	sum := &crcCheck{}
	rc, err := b.pinned(pin, func(ctx context.Context, off int64) (io.ReadCloser, ObjectInfo, int64, error) {
		if pin.Generation != 0 && off == 0 {
			cur, err := b.Stat(ctx, pin.Key)
			if errors.Is(err, ErrNotFound) {
				return nil, ObjectInfo{}, 0, &ChangedError{Bucket: b.name, Pinned: pin, Reason: "object is gone"}
			}
			if err != nil {
				return nil, ObjectInfo{}, 0, err
			}
			if cur.Generation != pin.Generation {
				return nil, ObjectInfo{}, 0, &ChangedError{Bucket: b.name, Pinned: pin, Reason: fmt.Sprintf("generation is %d", cur.Generation)}
			}
		}
		q := url.Values{"alt": {"media"}}
		if gen != 0 {
			q.Set("generation", strconv.FormatInt(gen, 10))
		}
		u := b.objectURL(pin.Key, q)
		var resp *http.Response
		err := b.do(ctx, func() (*http.Request, error) {
			req, err := b.request(ctx, http.MethodGet, u, nil, 0)
			if err == nil && off > 0 {
				req.Header.Set("Range", rangeHeader(off))
			}
			return req, err
		}, func(r *http.Response) error { resp = r; return nil })
		if err != nil {
			if s := httpStatus(err); s == http.StatusNotFound || s == http.StatusPreconditionFailed {
				return nil, ObjectInfo{}, 0, &ChangedError{Bucket: b.name, Pinned: pin, Reason: "pinned generation is gone"}
			}
			return nil, ObjectInfo{}, 0, fail(ctx, err)
		}
		seen, start, err := gcsReadInfo(pin, resp)
		if err != nil {
			resp.Body.Close()
			return nil, ObjectInfo{}, 0, fail(ctx, err)
		}
		if off == 0 {
			sum.expect(resp)
			gen = seen.Generation
		}
		return resp.Body, seen, start, nil
	}, fail).start(ctx)
	if err != nil {
		return nil, err
	}
	return &crcReader{ReadCloser: rc, sum: sum, hash: crc32.New(crc32cTable), fail: func(err error) error { return fail(ctx, err) }}, nil
}

// gcsReadInfo is what a media response says it is: its size (a ranged
// one's from Content-Range), mtime and generation (the one asked for unless
// the server names another), and the offset its body starts at.
func gcsReadInfo(pin ObjectInfo, resp *http.Response) (ObjectInfo, int64, error) {
	seen := ObjectInfo{Key: pin.Key, Size: resp.ContentLength, Generation: pin.Generation}
	if g := resp.Header.Get("X-Goog-Generation"); g != "" {
		gen, err := strconv.ParseInt(g, 10, 64)
		if err != nil {
			return ObjectInfo{}, 0, fmt.Errorf("bad X-Goog-Generation %.40q", g)
		}
		seen.Generation = gen
	}
	if lm := resp.Header.Get("Last-Modified"); lm != "" {
		t, err := http.ParseTime(lm)
		if err != nil {
			return ObjectInfo{}, 0, fmt.Errorf("bad Last-Modified %.60q", lm)
		}
		seen.ModTime = t
	}
	var start int64
	if resp.StatusCode == http.StatusPartialContent {
		var err error
		if start, seen.Size, err = parseContentRange(resp.Header.Get("Content-Range")); err != nil {
			return ObjectInfo{}, 0, err
		}
	}
	return seen, start, nil
}

var crc32cTable = crc32.MakeTable(crc32.Castagnoli)

// crcCheck is the CRC32C a pinned read's bytes must have: the X-Goog-Hash
// of its first, whole answer, unless the bytes were decompressed on the
// way (GCS hashes what it stores).
type crcCheck struct {
	want uint32
	ok   bool
}

func (c *crcCheck) expect(resp *http.Response) {
	if resp.StatusCode != http.StatusOK || resp.Uncompressed ||
		(resp.Header.Get("X-Goog-Stored-Content-Encoding") == "gzip" && resp.Header.Get("Content-Encoding") != "gzip") {
		return
	}
	c.want, c.ok = gcsCRC32C(resp.Header.Values("X-Goog-Hash"))
}

// gcsCRC32C finds crc32c=<base64> in X-Goog-Hash values ("crc32c=…,md5=…").
func gcsCRC32C(values []string) (uint32, bool) {
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			if s, ok := strings.CutPrefix(strings.TrimSpace(part), "crc32c="); ok {
				if c, err := decodeCRC32C(s); err == nil {
					return c, true
				}
			}
		}
	}
	return 0, false
}

func decodeCRC32C(s string) (uint32, error) {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(raw) != 4 {
		return 0, fmt.Errorf("bad crc32c %.20q", s)
	}
	return binary.BigEndian.Uint32(raw), nil
}

func encodeCRC32C(c uint32) string {
	return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, c))
}

// crcReader hashes what a pinned read delivers, across resumptions (they
// are of the same generation), and checks the sum at EOF.
type crcReader struct {
	io.ReadCloser
	sum  *crcCheck
	hash hash.Hash32
	fail func(error) error
}

func (r *crcReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.hash.Write(p[:n])
	if err == io.EOF && r.sum.ok && r.hash.Sum32() != r.sum.want {
		return n, r.fail(fmt.Errorf("bad CRC32C on read: got %s, want %s", encodeCRC32C(r.hash.Sum32()), encodeCRC32C(r.sum.want)))
	}
	return n, err
}

func (b *GCS) Put(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	return b.put(ctx, key, r, size, "")
}

func (b *GCS) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	return b.put(ctx, key, r, size, "0")
}

func (b *GCS) PutIfMatch(ctx context.Context, prev ObjectInfo, r io.Reader, size int64) (ObjectInfo, error) {
	if prev.Generation == 0 {
		return ObjectInfo{}, b.err(ctx, "put", prev.Key, errors.New("the previous version has no generation"))
	}
	return b.put(ctx, prev.Key, r, size, strconv.FormatInt(prev.Generation, 10))
}

// put uploads in one request (uploadType=media): the object appears whole
// or not at all, and nothing is buffered in memory. It is retried from a
// seekable body (a plain reader is spooled to a temp file first) for the
// transient errors, up to Retry.Attempts requests; ifGen, when set, is the
// ifGenerationMatch condition. Like the SDK, it sends the sniffed content
// type and checks the CRC32C the server computed against the bytes sent.
func (b *GCS) put(ctx context.Context, key string, r io.Reader, size int64, ifGen string) (ObjectInfo, error) {
	ctx, _ = track(ctx, 0)
	body, done, err := seekable(r, size)
	if err != nil {
		return ObjectInfo{}, b.err(ctx, "put", key, err)
	}
	defer done()
	ctype, err := sniffBody(body, size)
	if err != nil {
		return ObjectInfo{}, b.err(ctx, "put", key, err)
	}
	q := url.Values{"uploadType": {"media"}, "name": {key}, "fields": {gcsObjectFields + ",crc32c"}, "prettyPrint": {"false"}}
	if ifGen != "" {
		q.Set("ifGenerationMatch", ifGen)
	}
	u := b.upload + "/b/" + gcsEscape(b.bucket) + "/o?" + q.Encode()
	var obj gcsObject
	var sent *uploadBody
	first := true
	err = b.do(ctx, func() (*http.Request, error) {
		if sent != nil {
			sent.detach() // the transport may still hold the last attempt's body
		}
		if !first {
			if _, err := body.Seek(0, io.SeekStart); err != nil {
				return nil, err
			}
		}
		first = false
		sent = &uploadBody{r: io.LimitReader(body, size), hash: crc32.New(crc32cTable)}
		req, err := b.request(ctx, http.MethodPost, u, sent, size)
		if err == nil {
			req.Header.Set("Content-Type", ctype)
		}
		return req, err
	}, func(resp *http.Response) (err error) {
		obj, err = decodeGCS(resp, parseGCSObject)
		return err
	})
	if sent != nil {
		sent.detach()
	}
	switch {
	case err == nil && obj.Crc32c != "":
		want, derr := decodeCRC32C(obj.Crc32c)
		if got := sent.sum(); derr != nil || got != want {
			return ObjectInfo{}, b.err(ctx, "put", key, fmt.Errorf("object checksum mismatch: sent %s, server %q; the bucket may hold a corrupted object", encodeCRC32C(got), obj.Crc32c))
		}
	case ifGen != "" && httpStatus(err) == http.StatusPreconditionFailed:
		if info, ok := ownWrite(ctx, b, key, body, size); ok {
			return info, nil
		}
		return ObjectInfo{}, b.err(ctx, "put", key, ErrPrecondition)
	case err != nil:
		return ObjectInfo{}, b.err(ctx, "put", key, err)
	}
	return obj.info(), nil
}

// sniffBody is the content type the SDK's uploads got (it sniffs the
// first 512 bytes), after checking that the body holds size bytes from
// where it stands; it leaves the body where it was.
func sniffBody(body io.ReadSeeker, size int64) (string, error) {
	cur, err := body.Seek(0, io.SeekCurrent)
	if err != nil {
		return "", err
	}
	end, err := body.Seek(0, io.SeekEnd)
	if err != nil {
		return "", err
	}
	if end-cur != size {
		return "", fmt.Errorf("source has %d bytes, expected %d", end-cur, size)
	}
	if _, err := body.Seek(cur, io.SeekStart); err != nil {
		return "", err
	}
	head := make([]byte, min(size, 512))
	if _, err := io.ReadFull(body, head); err != nil {
		return "", err
	}
	if _, err := body.Seek(cur, io.SeekStart); err != nil {
		return "", err
	}
	return http.DetectContentType(head), nil
}

// uploadBody is one upload attempt's view of the body. The transport may
// read a request body after it returned the response (it closes it in its
// own time), so detach cuts the attempt off before the next one rewinds the
// body: later reads fail. It hashes what it hands out.
type uploadBody struct {
	mu       sync.Mutex
	r        io.Reader
	hash     hash.Hash32
	detached bool
}

var errDetached = errors.New("upload attempt is over")

func (u *uploadBody) Read(p []byte) (int, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.detached {
		return 0, errDetached
	}
	n, err := u.r.Read(p)
	u.hash.Write(p[:n])
	return n, err
}

func (u *uploadBody) Close() error { return nil }

func (u *uploadBody) detach() {
	u.mu.Lock()
	u.detached = true
	u.mu.Unlock()
}

func (u *uploadBody) sum() uint32 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.hash.Sum32()
}

// request builds one API request; body, when not nil, has exactly size
// bytes.
func (b *GCS) request(ctx context.Context, method, u string, body io.Reader, size int64) (*http.Request, error) {
	if body == nil || size == 0 {
		body = http.NoBody // Content-Length: 0, not a chunked upload
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	req.ContentLength = size
	if b.quotaProject != "" {
		req.Header.Set("X-Goog-User-Project", b.quotaProject)
	}
	return req, nil
}

// objectURL is the JSON API URL of key with query q.
func (b *GCS) objectURL(key string, q url.Values) string {
	return b.api + "/b/" + gcsEscape(b.bucket) + "/o/" + gcsEscape(key) + "?" + q.Encode()
}

// gcsEscape escapes a bucket or object name as one path segment: '/'
// included, and everything but the unreserved characters, as the SDK's
// JSON calls did (url.PathEscape would leave '+', '=', '@' ... as they are).
func gcsEscape(s string) string {
	const hex = "0123456789ABCDEF"
	var out strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			out.WriteByte(c)
		} else {
			out.WriteByte('%')
			out.WriteByte(hex[c>>4])
			out.WriteByte(hex[c&15])
		}
	}
	return out.String()
}

// do makes one API call: it sends the requests mk builds and hands a 2xx
// response to handle (which closes its body, or keeps it), retrying with
// the backoff, up to Retry.Attempts requests, while the failure is
// transient (gcsRetryable), handle's reading of the body included, and
// waiting as long as an answer's Retry-After asks (as for S3 and Azure).
// Any other answer is a *gcsError.
func (b *GCS) do(ctx context.Context, mk func() (*http.Request, error), handle func(*http.Response) error) error {
	for attempt := 1; ; attempt++ {
		err := b.attempt(mk, handle)
		if err == nil || attempt >= b.retry.Attempts || !gcsRetryable(err) || ctx.Err() != nil {
			return err
		}
		var ge *gcsError
		retryAfter := ""
		if errors.As(err, &ge) {
			retryAfter = ge.RetryAfter
		}
		wait, err := b.retry.wait(attempt, retryAfter, err)
		if err != nil {
			return err
		}
		if err := sleepCtx(ctx, wait); err != nil {
			return err
		}
	}
}

func (b *GCS) attempt(mk func() (*http.Request, error), handle func(*http.Response) error) error {
	req, err := mk()
	if err != nil {
		return err
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		ge := parseGCSError(resp.StatusCode, data)
		ge.RetryAfter = resp.Header.Get("Retry-After")
		return ge
	}
	return handle(resp)
}

// gcsRetryable is what storage.ShouldRetry counted as transient over HTTP:
// 408, 429 and 5xx answers, connections refused, reset or closed, bodies
// cut short, and timeouts (the transport's *TimeoutError included); never
// a read's exhausted budget or a cancelled context.
func gcsRetryable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	switch e := err.(type) {
	case *gcsError:
		return e.Code == http.StatusRequestTimeout || e.Code == http.StatusTooManyRequests || (e.Code >= 500 && e.Code < 600)
	case *url.Error:
		// The SDK matched the whole text, URL included: the cause's is enough.
		if (e.Err != nil && transientText(e.Err.Error())) || errors.Is(err, io.EOF) {
			return true
		}
	case *net.OpError:
		if transientText(e.Error()) || errors.Is(err, io.EOF) {
			return true
		}
	case *net.DNSError:
		if e.IsTemporary {
			return true
		}
	case interface{ Temporary() bool }:
		if e.Temporary() {
			return true
		}
	}
	if u, ok := err.(interface{ Unwrap() error }); ok {
		return gcsRetryable(u.Unwrap())
	}
	return false
}

// transientText matches the socket and transport errors net/http does not
// type (the SDK's list).
func transientText(s string) bool {
	for _, t := range [...]string{"connection refused", "connection reset", "broken pipe", "client connection lost", "server closed idle connection"} {
		if strings.Contains(s, t) {
			return true
		}
	}
	return false
}

// gcsError is a JSON API answer other than 2xx: its status, and the
// message and reason of its JSON error body (or the start of a body that
// is not one). httpStatus reads Code.
type gcsError struct {
	Code       int
	Message    string
	Reason     string
	RetryAfter string // the answer's Retry-After header
}

func (e *gcsError) Error() string {
	msg := fmt.Sprintf("HTTP %d %s", e.Code, http.StatusText(e.Code))
	if e.Message != "" && e.Message != http.StatusText(e.Code) {
		msg += ": " + e.Message
	}
	if e.Reason != "" {
		msg += " (" + e.Reason + ")"
	}
	return msg
}

// parseGCSError reads an error answer: {"error": {"code", "message",
// "errors": [{"reason"}]}} from GCS and fake-gcs-server, anything else
// (a proxy's page, plain text) as text. The message is one line, at most
// 300 bytes.
func parseGCSError(status int, body []byte) *gcsError {
	e := &gcsError{Code: status}
	var doc struct {
		Error struct {
			Message string `json:"message"`
			Errors  []struct {
				Reason string `json:"reason"`
			} `json:"errors"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &doc) == nil && doc.Error.Message != "" {
		e.Message = doc.Error.Message
		if len(doc.Error.Errors) > 0 {
			e.Reason = clip(oneLine(doc.Error.Errors[0].Reason), 60)
		}
	} else {
		e.Message = string(body)
	}
	e.Message = clip(strings.TrimSpace(oneLine(e.Message)), 300)
	return e
}

// clip cuts s to at most n bytes, on a rune boundary when it is valid UTF-8.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && i > n-4 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "…"
}

// gcsObject is the part of an object resource the backend reads. Sizes and
// generations are int64s as JSON strings (numbers are accepted too).
type gcsObject struct {
	Name       string    `json:"name"`
	Size       gcsInt    `json:"size"`
	Updated    time.Time `json:"updated"`
	Etag       string    `json:"etag"`
	Generation gcsInt    `json:"generation"`
	Crc32c     string    `json:"crc32c"`
}

func (o gcsObject) info() ObjectInfo {
	return ObjectInfo{Key: o.Name, Size: int64(o.Size), ModTime: o.Updated, ETag: o.Etag, Generation: int64(o.Generation)}
}

// gcsList is one page of objects.list.
type gcsList struct {
	Items         []gcsObject `json:"items"`
	NextPageToken string      `json:"nextPageToken"`
}

type gcsInt int64

func (n *gcsInt) UnmarshalJSON(data []byte) error {
	s := string(data)
	if s == "null" {
		return nil
	}
	if unq, err := strconv.Unquote(s); err == nil {
		s = unq
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return fmt.Errorf("bad integer %.40s", data)
	}
	*n = gcsInt(v)
	return nil
}

func parseGCSObject(data []byte) (gcsObject, error) {
	var o gcsObject
	if err := json.Unmarshal(data, &o); err != nil {
		return gcsObject{}, fmt.Errorf("bad object resource: %w", err)
	}
	if o.Name == "" {
		return gcsObject{}, errors.New("bad object resource: no name")
	}
	return o, nil
}

func parseGCSList(data []byte) (gcsList, error) {
	var l gcsList
	if err := json.Unmarshal(data, &l); err != nil {
		return gcsList{}, fmt.Errorf("bad objects.list page: %w", err)
	}
	for _, o := range l.Items {
		if o.Name == "" {
			return gcsList{}, errors.New("bad objects.list page: an item without a name")
		}
	}
	return l, nil
}

// decodeGCS reads a JSON answer whole and parses it. A body that fails
// mid-way fails with the read error, which do retries when it is transient.
func decodeGCS[T any](resp *http.Response, parse func([]byte) (T, error)) (T, error) {
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		var zero T
		return zero, err
	}
	return parse(data)
}

// err is the *Error of op on key; a missing object or bucket also matches
// ErrNotFound.
func (b *GCS) err(ctx context.Context, op, key string, err error) error {
	if httpStatus(err) == http.StatusNotFound {
		err = fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return b.fail(ctx, op, key, err)
}
