package web_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

// The browser tests drive Debian's Chromium (scripts/install-chromium.sh
// installs it at a pinned version) against the real pchronicle binary.
// Without Chromium they skip locally and fail in CI (CI=true).

const chromiumPath = "/usr/bin/chromium"

func needChromium(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Chromium is required in CI (%s: %v); scripts/test.sh installs it with scripts/install-chromium.sh", chromiumPath, err)
		}
		t.Skipf("no Chromium at %s: run scripts/install-chromium.sh to run the browser tests", chromiumPath)
	}
	return chromiumPath
}

// server is a running `pchronicle serve`.
type server struct {
	url string
	cmd *exec.Cmd
}

var servingLine = regexp.MustCompile(`pchronicle serving (http://\S+)`)

// serve starts the real binary on a free loopback port and waits until it
// serves its first Snapshot.
func serve(t *testing.T, args ...string) *server {
	t.Helper()
	bin := testutil.Binary(t)
	cmd := exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "warn"}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var log strings.Builder
		for sc.Scan() {
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				io.Copy(io.Discard, stderr)
				return
			}
			log.WriteString(sc.Text() + "\n")
		}
		found <- "failed: " + log.String()
	}()
	select {
	case u := <-found:
		if !strings.HasPrefix(u, "http://") {
			t.Fatalf("pchronicle serve did not start: %s", u)
		}
		return &server{url: u, cmd: cmd}
	case <-time.After(2 * time.Minute):
		t.Fatal("pchronicle serve did not print its URL within 2 minutes")
	}
	return nil
}

// post sends an empty POST (a refresh) and returns the status.
func (s *server) post(t *testing.T, path string) int {
	t.Helper()
	res, err := http.Post(s.url+path, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// browser starts a fresh headless Chromium and returns its context.
func browser(t *testing.T, width, height int) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(needChromium(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	// Every document gets a probe: it records what a page must never do
	// (run a script from trajectory text, violate the CSP), for the checks.
	if _, err := chromedp.Call(ctx, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: probeScript}); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	// A tab in the background gets no animation frames.
	if _, err := chromedp.Call(ctx, cdppage.BringToFront, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// probeScript is installed through DevTools, outside the page's CSP.
const probeScript = `
window.__pc = { violations: [], longTasks: [], errors: [] };
document.addEventListener('securitypolicyviolation', (e) => window.__pc.violations.push(e.violatedDirective + ' ' + e.blockedURI));
window.addEventListener('error', (e) => window.__pc.errors.push(String(e.message) + ' at ' + e.filename + ':' + e.lineno));
window.addEventListener('unhandledrejection', (e) => window.__pc.errors.push(String(e.reason && e.reason.stack || e.reason)));
try {
  new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__pc.longTasks.push({ start: e.startTime, duration: e.duration }); }).observe({ type: 'longtask', buffered: true });
} catch (e) {}
`

// run runs actions with a deadline, failing the test with what it was doing.
func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(c, actions...); err != nil {
		shot(t, ctx, "failed-"+safe(what))
		t.Fatalf("%s: %v", what, err)
	}
}

func safe(s string) string {
	return regexp.MustCompile(`[^a-zA-Z0-9_-]+`).ReplaceAllString(s, "-")
}

// artifacts is where screenshots go: $PCHRONICLE_ARTIFACTS, else
// testdata/.artifacts (ignored by git).
func artifacts(t *testing.T) string {
	dir := os.Getenv("PCHRONICLE_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("testdata", ".artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// shot saves a full-page screenshot as an artifact.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	buf, err := chromedp.Run(c, chromedp.CaptureScreenshot())
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(artifacts(t), name+".png")
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}
