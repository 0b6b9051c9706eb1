// Package faults is a fault-injecting HTTP proxy for tests: it sits between
// an SDK client and a real object-store test server (versitygw, Azurite,
// fake-gcs-server) and, for the requests matching its rules, delays them,
// answers an error status instead of forwarding, cuts the response body
// short, resets the connection mid-body, or stalls the body. A hook can run
// at the cut, so a test can write a new version of the object through the
// real server between two ranged reads.
//
// Everything else is forwarded unchanged, Host header included, so request
// signatures (S3 SigV4) stay valid; ServerHost sends the target's host
// instead, for servers that route by it.
package faults

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Always makes a rule apply to every matching request.
const Always = -1

// Proxy forwards to one target server and injects faults per its rules.
type Proxy struct {
	URL string // the base URL clients use instead of the target's (same path)

	target     *url.URL
	transport  *http.Transport
	serverHost bool

	mu    sync.Mutex
	rules []*Rule
	seen  []Request
}

// Request is one request the proxy received.
type Request struct {
	At    time.Time
	Req   *http.Request // method, URL and headers; the body is gone
	Fault string        // the fault injected, "" when forwarded untouched
}

// Rule injects Fault into requests for which Match is true: it lets the
// first Skip of them through, then applies to the next Times (Always: all).
type Rule struct {
	Match func(*http.Request) bool
	Skip  int
	Times int
	Fault Fault

	hits int // matching requests seen
}

// Option configures a Proxy.
type Option func(*Proxy)

// ServerHost makes the proxy send the target's Host header rather than the
// client's: fake-gcs-server routes its XML API by host (and GCS requests
// to an emulator are not signed).
func ServerHost() Option { return func(p *Proxy) { p.serverHost = true } }

// New starts a proxy on 127.0.0.1 in front of target (a base URL such as
// "http://127.0.0.1:7070" or Azurite's ".../devstoreaccount1") and stops it
// when the test ends.
func New(t testing.TB, target string, opts ...Option) *Proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{target: u, transport: &http.Transport{
		Proxy:               nil,  // never an environment proxy
		DisableCompression:  true, // bytes pass through exactly
		MaxIdleConnsPerHost: 16,
	}}
	for _, o := range opts {
		o(p)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		p.transport.CloseIdleConnections()
	})
	p.URL = srv.URL + strings.TrimRight(u.Path, "/")
	return p
}

// Add installs a rule. Rules are tried in the order they were added; the
// first one that matches a request and still applies decides its fault.
func (p *Proxy) Add(r Rule) *Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, &r)
	return &r
}

// Clear removes every rule (the proxy then only forwards).
func (p *Proxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
}

// Requests returns the requests received so far that match (all when nil).
func (p *Proxy) Requests(match func(*http.Request) bool) []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Request
	for _, r := range p.seen {
		if match == nil || match(r.Req) {
			out = append(out, r)
		}
	}
	return out
}

// Count is len(Requests(match)).
func (p *Proxy) Count(match func(*http.Request) bool) int { return len(p.Requests(match)) }

// Log describes every request received, one per line, for test failures.
func (p *Proxy) Log() string {
	var b strings.Builder
	for _, r := range p.Requests(nil) {
		fmt.Fprintf(&b, "%s %s %s", r.At.Format("15:04:05.000"), r.Req.Method, r.Req.URL.RequestURI())
		if r.Req.Header.Get("Range") != "" {
			fmt.Fprintf(&b, " [%s]", r.Req.Header.Get("Range"))
		}
		if r.Fault != "" {
			fmt.Fprintf(&b, " -> %s", r.Fault)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// fault picks the fault for r and records the request.
func (p *Proxy) fault(r *http.Request) *Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	var f *Fault
	for _, rule := range p.rules {
		if !rule.Match(r) {
			continue
		}
		rule.hits++
		if rule.hits > rule.Skip && (rule.Times == Always || rule.hits <= rule.Skip+rule.Times) {
			f = &rule.Fault
			break
		}
	}
	rec := Request{At: time.Now(), Req: r.Clone(r.Context())}
	if f != nil {
		rec.Fault = f.String()
	}
	p.seen = append(p.seen, rec)
	return f
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f := p.fault(r)
	if f != nil && f.delay > 0 && !sleep(r, f.delay) {
		return // the client gave up
	}
	if f != nil && f.status != 0 {
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		writeError(w, f.status)
		return
	}
	resp, err := p.forward(r)
	if err != nil {
		http.Error(w, "faults proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	if f != nil && f.kind == kindDrop {
		io.Copy(io.Discard, resp.Body)
		reset(w)
		return
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	if f == nil || f.cut < 0 {
		io.Copy(w, resp.Body)
		return
	}
	io.CopyN(w, resp.Body, f.cut)
	w.(http.Flusher).Flush()
	if f.then != nil {
		f.then()
	}
	switch f.kind {
	case kindStall:
		if sleep(r, f.stall) {
			io.Copy(w, resp.Body)
		}
	case kindTruncate:
		hijack(w).Close()
	case kindReset:
		// A reset drops what the client has not read yet: give it a moment
		// to take the bytes sent, so the reset is mid-body.
		time.Sleep(20 * time.Millisecond)
		reset(w)
	}
}

func hijack(w http.ResponseWriter) net.Conn {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(fmt.Sprintf("faults proxy: hijack: %v", err)) // an HTTP/1.1 server always can
	}
	return conn
}

// reset closes the client's connection with a TCP RST instead of a FIN.
func reset(w http.ResponseWriter) {
	conn := hijack(w)
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

func (p *Proxy) forward(r *http.Request) (*http.Response, error) {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = p.target.Scheme, p.target.Host
	out.Host = r.Host // signed by the client: keep it
	if p.serverHost {
		out.Host = p.target.Host
	}
	return p.transport.RoundTrip(out)
}

// sleep waits d unless the client goes away first; it reports whether the
// full time passed.
func sleep(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// writeError answers status with a body each SDK parses as a service error
// (S3 and Azure read the XML code; GCS keeps the status).
func writeError(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("x-ms-error-code", "InjectedFault")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>InjectedFault</Code><Message>injected %d %s</Message></Error>",
		status, http.StatusText(status))
}
