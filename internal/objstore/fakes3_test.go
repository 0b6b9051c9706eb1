package objstore_test

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pchronicle/pchronicle/internal/objstore"
)

// pageServer is an in-process S3 endpoint whose bucket "gen" holds n
// generated keys (k000000000, k000000001, ...). Pages of ListObjectsV2 are
// generated on the fly, so a listing of millions of keys costs the server no
// memory, and whatever the client holds is the client's own.
type pageServer struct {
	n        int
	requests atomic.Int64
	// echo, when set, makes every request fail with an error message that
	// quotes it (a server echoing request material back).
	echo string
}

func (s *pageServer) start(t testing.TB) objstore.Config {
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return objstore.Config{Endpoint: srv.URL, PathStyle: true, AccessKey: "AK", SecretKey: "fake-secret-value"}
}

type listResult struct {
	XMLName               xml.Name `xml:"ListBucketResult"`
	Name                  string
	Prefix                string
	KeyCount              int
	MaxKeys               int
	IsTruncated           bool
	NextContinuationToken string `xml:",omitempty"`
	Contents              []listEntry
}

type listEntry struct {
	Key          string
	LastModified string
	ETag         string
	Size         int64
}

func (s *pageServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	q := r.URL.Query()
	switch {
	case s.echo != "":
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `<Error><Code>SignatureDoesNotMatch</Code><Message>expected %s</Message></Error>`, s.echo)
	case q.Has("versioning"):
		fmt.Fprint(w, `<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"></VersioningConfiguration>`)
	case q.Get("list-type") == "2":
		s.page(w, q.Get("continuation-token"), q.Get("max-keys"))
	default:
		http.Error(w, "unsupported", http.StatusNotImplemented)
	}
}

func (s *pageServer) page(w http.ResponseWriter, token, maxKeys string) {
	start, _ := strconv.Atoi(strings.TrimPrefix(token, "k"))
	if token != "" {
		start++
	}
	size, err := strconv.Atoi(maxKeys)
	if err != nil || size <= 0 || size > 1000 {
		size = 1000
	}
	end := min(start+size, s.n)
	res := listResult{Name: "gen", MaxKeys: size, KeyCount: end - start, IsTruncated: end < s.n}
	res.Contents = make([]listEntry, 0, end-start)
	for i := start; i < end; i++ {
		res.Contents = append(res.Contents, listEntry{Key: fmt.Sprintf("k%09d", i), LastModified: "2024-01-01T00:00:00.000Z", ETag: `"e"`, Size: 2})
	}
	if res.IsTruncated {
		res.NextContinuationToken = fmt.Sprintf("k%09d", end-1)
	}
	w.Header().Set("Content-Type", "application/xml")
	xml.NewEncoder(w).Encode(res)
}

// errTooMany stands for the catalog's max_entries limit error.
var errTooMany = errors.New("max_entries exceeded")

// listBounded is how the catalog consumes a listing: it fails at entry
// maxEntries+1 without collecting anything.
func listBounded(b objstore.Bucket, maxEntries int) (int, error) {
	n := 0
	err := b.List(ctx, "", func(objstore.ObjectInfo) error {
		if n++; n > maxEntries {
			return errTooMany
		}
		return nil
	})
	return n, err
}

func TestListBoundStopsEarly(t *testing.T) {
	srv := &pageServer{n: 50_000}
	b := openWith(t, "s3://gen", srv.start(t), nil)
	n, err := listBounded(b, 2_500)
	if !errors.Is(err, errTooMany) {
		t.Fatalf("err = %v", err)
	}
	// versioning probe + 3 pages of 1,000: entry 2,501 is on the third.
	if n != 2_501 || srv.requests.Load() != 4 {
		t.Fatalf("read %d entries over %d requests; want 2501 over 4", n, srv.requests.Load())
	}
}

// TestEchoedSecretIsScrubbed: even a server quoting the secret back does
// not get it into an error.
func TestEchoedSecretIsScrubbed(t *testing.T) {
	srv := &pageServer{n: 1}
	cfg := srv.start(t)
	srv.echo = cfg.SecretKey.Reveal()
	b := openWith(t, "s3://gen", cfg, nil)
	_, err := listBounded(b, 10)
	if err == nil || strings.Contains(err.Error(), srv.echo) || !strings.Contains(err.Error(), "[redacted]") {
		t.Fatalf("err = %v", err)
	}
}
