package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/objstore/testservers"
	"github.com/pchronicle/pchronicle/internal/testutil"
)

// TestCrossDatasetJoinLocalAndS3 pins an s3:// Dataset with its endpoint
// and keys in a temp config, then joins it with a local mount from the CLI.
func TestCrossDatasetJoinLocalAndS3(t *testing.T) {
	s := testservers.StartS3(t)
	bucket := s.NewS3Bucket(t, false)
	chats := filepath.Join(testutil.RepoRoot(t), "examples", "trajectories", "openai", "support-chats.jsonl")
	data, err := os.ReadFile(chats)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := objstore.Open(context.Background(), "s3://"+bucket, s.S3Config())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Put(context.Background(), "archive/2026/support-chats.jsonl", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}

	cfg := filepath.Join(t.TempDir(), "config.toml")
	r := run(t, "dataset", "pin", "-c", cfg, "arch", "s3://"+bucket+"/archive/",
		"--endpoint", s.Endpoint, "--region", s.Region, "--path-style", "--ak", s.AccessKey, "--sk", s.SecretKey)
	if r.code != 0 {
		t.Fatalf("pin: exit %d: %s", r.code, r.stderr)
	}
	if fi, err := os.Stat(cfg); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config file: %v %v, want mode 0600", fi.Mode(), err)
	}
	for _, args := range [][]string{{"dataset", "show", "-c", cfg, "arch"}, {"dataset", "list", "-c", cfg, "--format", "json"}} {
		r := run(t, args...)
		if r.code != 0 || strings.Contains(r.stdout+r.stderr, s.SecretKey) {
			t.Fatalf("%v: exit %d, secret printed or failed: %s %s", args, r.code, r.stdout, r.stderr)
		}
		if args[1] == "show" && !strings.Contains(r.stdout, "secret_key: (set)") {
			t.Fatalf("show: %q lacks secret_key: (set)", r.stdout)
		}
	}

	local := run(t, "query", "--mount", "cur="+filepath.Dir(chats), "SELECT count(*) AS n FROM cur.runs", "--format", "csv")
	if local.code != 0 || local.stdout == "n\n0\n" {
		t.Fatalf("local count: %d %q %q", local.code, local.stdout, local.stderr)
	}
	r = run(t, "query", "-c", cfg, "--mount", "cur="+filepath.Dir(chats), "--mount", "arch=@arch",
		"SELECT count(*) AS n FROM cur.runs c JOIN arch.runs a ON c.session_id = a.session_id AND a._file_ = '2026/support-chats.jsonl'",
		"--format", "csv")
	if r.code != 0 || r.stdout != local.stdout {
		t.Fatalf("join: exit %d, %q (want %q): %s", r.code, r.stdout, local.stdout, r.stderr)
	}
	if strings.Contains(r.stderr, s.SecretKey) {
		t.Fatal("the secret leaked to stderr")
	}
}
