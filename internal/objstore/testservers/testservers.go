// Package testservers starts the real object-store servers the objstore
// tests run against — versitygw (S3), Azurite (Azure Blob) and
// fake-gcs-server (GCS) — on 127.0.0.1 with free ports, waits until they
// answer and stops them when the test ends. The binaries come from
// scripts/install-test-servers.sh (pinned versions, under .tools/).
//
// A missing binary fails the test; PCHRONICLE_SKIP_OBJSTORE=1 skips the
// server tests instead.
package testservers

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/fsx"
	"github.com/pchronicle/pchronicle/internal/objstore/faults"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// SkipEnv names the variable that skips every test needing a server.
const SkipEnv = "PCHRONICLE_SKIP_OBJSTORE"

// Azurite's fixed development account.
const (
	AzuriteAccount = "devstoreaccount1"
	AzuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Server is a running test server.
type Server struct {
	Endpoint  string // base URL (Azurite: includes the account path)
	Region    string // S3 only
	AccessKey string // S3 access key; Azure account name
	SecretKey string // S3 secret key; Azure account key

	routesByHost bool // fake-gcs-server: the proxy must send its Host
}

// Proxy starts a fault-injecting proxy in front of the server; a client
// reaches the server through it with its Config's Endpoint set to the
// proxy's URL.
func (s *Server) Proxy(t testing.TB) *faults.Proxy {
	var opts []faults.Option
	if s.routesByHost {
		opts = append(opts, faults.ServerHost())
	}
	return faults.New(t, s.Endpoint, opts...)
}

// StartS3 starts versitygw with the posix backend and bucket versioning,
// both in temp directories of t.
func StartS3(t testing.TB) *Server {
	bin := binary(t, filepath.Join("bin", "versitygw"))
	root, versions := t.TempDir(), t.TempDir()
	const ak, sk = "pchronicle-test-ak", "pchronicle-test-secret-0123456789"
	addr := start(t, "versitygw", func(port int) *exec.Cmd {
		return exec.Command(bin, "--access", ak, "--secret", sk, "--region", "us-east-1", "--quiet",
			"--port", "127.0.0.1:"+strconv.Itoa(port), "posix", "--versioning-dir", versions, root)
	}, "/")
	return &Server{Endpoint: "http://" + addr, Region: "us-east-1", AccessKey: ak, SecretKey: sk}
}

// StartAzurite starts Azurite's blob service in memory.
func StartAzurite(t testing.TB) *Server {
	bin := binary(t, filepath.Join("azurite", "node_modules", ".bin", "azurite-blob"))
	dir := t.TempDir()
	addr := start(t, "azurite", func(port int) *exec.Cmd {
		cmd := exec.Command(bin, "--blobHost", "127.0.0.1", "--blobPort", strconv.Itoa(port),
			"--inMemoryPersistence", "--disableTelemetry", "--skipApiVersionCheck", "--silent")
		cmd.Dir = dir // anything Azurite still writes lands in t's temp dir
		return cmd
	}, "/"+AzuriteAccount+"?comp=list")
	return &Server{Endpoint: "http://" + addr + "/" + AzuriteAccount, AccessKey: AzuriteAccount, SecretKey: AzuriteKey}
}

// StartGCS starts fake-gcs-server over plain HTTP with the memory backend.
func StartGCS(t testing.TB) *Server {
	bin := binary(t, filepath.Join("bin", "fake-gcs-server"))
	addr := start(t, "fake-gcs-server", func(port int) *exec.Cmd {
		p := strconv.Itoa(port)
		return exec.Command(bin, "-scheme", "http", "-host", "127.0.0.1", "-port", p,
			"-public-host", "127.0.0.1:"+p, "-external-url", "http://127.0.0.1:"+p, "-backend", "memory", "-log-level", "error")
	}, "/storage/v1/b")
	return &Server{Endpoint: "http://" + addr, routesByHost: true}
}

// binary locates a tool under .tools/ of the repository.
func binary(t testing.TB, rel string) string {
	t.Helper()
	if os.Getenv(SkipEnv) == "1" {
		t.Skipf("%s=1: object-store server tests skipped", SkipEnv)
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, ".tools", rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing: run scripts/install-test-servers.sh (or set %s=1 to skip these tests)", p, SkipEnv)
	}
	return p
}

var (
	rootOnce sync.Once
	root     string
	rootErr  error
)

func repoRoot() (string, error) {
	rootOnce.Do(func() {
		wd, err := os.Getwd()
		if err == nil {
			root, err = fsx.Ancestor(wd, "go.mod")
		}
		if err != nil {
			rootErr = fmt.Errorf("testservers: the repository root: %w", err)
		}
	})
	return root, rootErr
}

// start runs the command on a free port until probe answers over HTTP with
// any status. A port taken between choosing and binding is retried.
func start(t testing.TB, name string, cmdFor func(port int) *exec.Cmd, probe string) string {
	t.Helper()
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		cmd := cmdFor(port)
		var log testutil.SyncBuffer
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		addr := "127.0.0.1:" + strconv.Itoa(port)
		if err := waitReady(addr, probe, exited); err != nil {
			cmd.Process.Kill()
			lastErr = fmt.Errorf("%s on %s: %v\n%s", name, addr, err, log.String())
			continue
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			<-exited
		})
		return addr
	}
	t.Fatal(lastErr)
	return ""
}

func waitReady(addr, probe string, exited <-chan error) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(60 * time.Second) // node and a loaded machine can be slow
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("exited early: %v", err)
		default:
		}
		if resp, err := client.Get("http://" + addr + probe); err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("did not answer within 60s")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
