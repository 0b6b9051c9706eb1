package remote_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/objstore/faults"
	"github.com/pchronicle/pchronicle/internal/store/remote"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// through opens be's bucket via a fresh fault-injecting proxy.
func through(t *testing.T, be backend) (objstore.Bucket, *faults.Proxy) {
	t.Helper()
	p := be.srv.Proxy(t)
	cfg := be.cfg
	cfg.Endpoint = p.URL
	cfg.Retry = objstore.Retry{Attempts: 3, BaseDelay: 10 * time.Millisecond, MaxDelay: 100 * time.Millisecond}
	b, _, err := objstore.Open(context.Background(), be.uri, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, p
}

func isWrite(r *http.Request) bool { return r.Method == http.MethodPut || r.Method == http.MethodPost }

// TestWritersUnderFaults runs the publication and append tests below on
// each backend, all at once (they share the servers).
func TestWritersUnderFaults(t *testing.T) {
	g := testutil.Together(t)
	defer g.Wait()
	for _, be := range backends(t) {
		g.Run("publish/"+be.name, func(t *testing.T) { testPublishUnderFaults(t, be) })
		g.Run("append/"+be.name, func(t *testing.T) { testAppendEventsUnderFaults(t, be) })
	}
}

// testPublishUnderFaults: transient faults on the uploads (a 500, the
// answer of the conditional CURRENT write lost) still publish exactly one
// new generation; a CURRENT write failing for good publishes nothing and
// says which object failed.
func testPublishUnderFaults(t *testing.T, be backend) {
	const prefix = "f/store"
	if _, err := publish(t, be.bucket, prefix, false, "a.json", 2); err != nil {
		t.Fatal(err)
	}
	b, p := through(t, be)
	p.Add(faults.Rule{Match: faults.ObjectWrite(prefix + "/CURRENT"), Times: 1, Fault: faults.Drop()})
	p.Add(faults.Rule{Match: isWrite, Times: 1, Fault: faults.Status(http.StatusInternalServerError)})
	if _, err := publish(t, b, prefix, true, "b.json", 3); err != nil {
		t.Fatalf("publish under transient faults: %v\n%s", err, p.Log())
	}
	if runs, _, gen := counts(t, be, prefix); runs != 5 || gen != "gen-000001" {
		t.Fatalf("after the faulted publish: runs %d %s; want 5, gen-000001\n%s", runs, gen, p.Log())
	}

	p.Clear()
	p.Add(faults.Rule{Match: faults.ObjectWrite(prefix + "/CURRENT"), Times: faults.Always, Fault: faults.Status(http.StatusServiceUnavailable)})
	_, err := publish(t, b, prefix, true, "c.json", 1)
	current := b.String() + "/" + prefix + "/CURRENT"
	if err == nil || errors.Is(err, remote.ErrLostRace) || !strings.Contains(err.Error(), current) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("publish with CURRENT failing: %v; want an error naming %s and the 503", err, current)
	}
	t.Logf("%v", err)
	if runs, _, gen := counts(t, be, prefix); runs != 5 || gen != "gen-000001" {
		t.Fatalf("a failed publication moved the store: runs %d %s", runs, gen)
	}
}

// testAppendEventsUnderFaults: the manifest write's answer lost once still
// appends exactly once.
func testAppendEventsUnderFaults(t *testing.T, be backend) {
	ctx := context.Background()
	src := format.Source{Path: "events.jsonl"}
	const prefix = "g/events.lance" // beside f/store of the publish test
	b, p := through(t, be)
	p.Add(faults.Rule{Match: faults.ObjectWrite(prefix + "/_manifest.json"), Times: 1, Fault: faults.Drop()})
	res, err := remote.AppendEvents(ctx, b, prefix, strings.NewReader(eventLine("a1", "s1", 0)+eventLine("a2", "s1", 1)), src)
	if err != nil || res.Manifest.Revision != 1 {
		t.Fatalf("append with the manifest answer lost: %+v %v\n%s", res, err, p.Log())
	}
	rev, ok := pinned(t, be, "g/").(catalog.RemoteEventsRevision)
	if !ok || rev.Manifest.Revision != 1 || rev.Manifest.Events != 2 {
		t.Fatalf("catalog pins %+v", rev.Manifest)
	}
}
