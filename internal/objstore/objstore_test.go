package objstore_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/objstore/testservers"
)

func TestParseURI(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "one.jsonl")
	if err := os.WriteFile(file, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		uri  string
		want objstore.Location
		err  string
	}{
		{uri: "s3://bkt/runs/2024/", want: objstore.Location{Scheme: "s3", Bucket: "bkt", Prefix: "runs/2024/"}},
		{uri: "s3://bkt", want: objstore.Location{Scheme: "s3", Bucket: "bkt"}},
		{uri: "S3://bkt//x", want: objstore.Location{Scheme: "s3", Bucket: "bkt", Prefix: "x"}},
		{uri: "az://container/p", want: objstore.Location{Scheme: "az", Bucket: "container", Prefix: "p"}},
		{uri: "gs://b/p/q.json", want: objstore.Location{Scheme: "gs", Bucket: "b", Prefix: "p/q.json"}},
		{uri: "file://" + dir, want: objstore.Location{Scheme: "file", Bucket: dir}},
		{uri: "local://" + dir, want: objstore.Location{Scheme: "file", Bucket: dir}},
		{uri: dir, want: objstore.Location{Scheme: "file", Bucket: dir}},
		{uri: file, want: objstore.Location{Scheme: "file", Bucket: dir, Prefix: "one.jsonl"}},
		{uri: "s3://", err: "missing bucket"},
		{uri: "s3://b/p?X-Amz-Signature=sekrit", err: "query strings"},
		{uri: "s3://ak:sekrit@b/p", err: "credentials in the URI"},
		{uri: "file://host/x", err: "must not name a host"},
		{uri: "ftp://x/y", err: "unsupported scheme"},
	} {
		got, err := objstore.ParseURI(tc.uri)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.uri, err, tc.err)
			}
			if err != nil && strings.Contains(err.Error(), "sekrit") {
				t.Errorf("%s: error leaks the secret: %v", tc.uri, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s = %+v, %v; want %+v", tc.uri, got, err, tc.want)
		}
	}
}

func TestSecretNeverPrints(t *testing.T) {
	cfg := objstore.Config{AccessKey: "AK", SecretKey: "s3cr3t-value"}
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%q", cfg.SecretKey), cfg.SecretKey.String()} {
		if strings.Contains(s, "s3cr3t") {
			t.Errorf("secret printed: %s", s)
		}
	}
	if cfg.SecretKey.Reveal() != "s3cr3t-value" {
		t.Fatal("Reveal")
	}
}

// TestAuthErrorsHideSecret forces authentication failures on the real
// servers with a recognizable wrong secret.
func TestAuthErrorsHideSecret(t *testing.T) {
	const wrong = "WRONG-secret-must-not-leak-4242"
	check := func(t *testing.T, b objstore.Bucket) {
		err := b.List(ctx, "", func(objstore.ObjectInfo) error { return nil })
		if err == nil {
			t.Fatal("list with a wrong secret succeeded")
		}
		if strings.Contains(err.Error(), wrong) || strings.Contains(fmt.Sprintf("%+v %s", err, b), wrong) {
			t.Fatalf("secret in error: %v", err)
		}
		t.Logf("error: %.200s", err)
	}
	t.Run("s3", func(t *testing.T) {
		srv := testservers.StartS3(t)
		cfg := srv.S3Config()
		cfg.SecretKey = wrong
		check(t, openWith(t, "s3://"+srv.NewS3Bucket(t, false), cfg, nil))
	})
	t.Run("azure", func(t *testing.T) {
		srv := testservers.StartAzurite(t)
		cfg := srv.AzureConfig()
		cfg.SecretKey = objstore.Secret("V1JPTkctc2VjcmV0LW11c3Qtbm90LWxlYWstNDI0Mg==") // base64, as shared keys are
		b := openWith(t, "az://"+srv.NewAzureContainer(t), cfg, nil)
		err := b.List(ctx, "", func(objstore.ObjectInfo) error { return nil })
		if err == nil || strings.Contains(err.Error(), cfg.SecretKey.Reveal()) {
			t.Fatalf("list with a wrong key: %v", err)
		}
	})
}

func TestLocalSkipsSymlinksAndRejectsEscapes(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(dir, "a.json"), []byte("{}"), 0o644)
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	os.Symlink(filepath.Join(outside, "secret.json"), filepath.Join(dir, "b.json"))
	b, err := objstore.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(list(t, b, "")); !equal(got, []string{"a.json"}) {
		t.Fatalf("list = %v", got)
	}
	for _, k := range []string{"../x", "a/../../x", "/etc/passwd", "", "a//b"} {
		if _, err := b.Put(ctx, k, strings.NewReader("x"), 1); err == nil {
			t.Errorf("put %q succeeded", k)
		}
	}
	if _, err := b.Stat(ctx, "b.json"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("stat of a symlink: %v", err)
	}
	missing, _ := objstore.NewLocal(filepath.Join(dir, "nope"))
	if err := missing.List(ctx, "", func(objstore.ObjectInfo) error { return nil }); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("list of a missing root: %v", err)
	}
}

// TestLocalInPlaceRewrite: a rewrite that keeps the inode but changes the
// size or mtime is caught, even when it happens during the read.
func TestLocalInPlaceRewrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.json")
	os.WriteFile(p, []byte(`{"a":1}`), 0o644)
	b, _ := objstore.NewLocal(dir)
	pin := list(t, b, "")[0]
	rc, err := b.ReadPinned(ctx, pin)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	later := pin.ModTime.Add(time.Second)
	if err := os.Chtimes(p, later, later); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	var readErr error
	for readErr == nil {
		_, readErr = rc.Read(buf)
	}
	if !errors.Is(readErr, objstore.ErrChanged) {
		t.Fatalf("read to EOF after a touch: %v, want ErrChanged", readErr)
	}
}

func TestRefs(t *testing.T) {
	mt := time.Date(2024, 5, 1, 2, 3, 4, 5000000, time.UTC)
	for _, tc := range []struct {
		info      objstore.ObjectInfo
		kind, ref string
	}{
		{objstore.ObjectInfo{Size: 3, ModTime: mt, ETag: `"e"`, VersionID: "v1"}, "s3_version", "version=v1;size=3;mtime=2024-05-01T02:03:04.005Z"},
		{objstore.ObjectInfo{Size: 3, Generation: 17}, "gcs_generation", "generation=17;size=3"},
		{objstore.ObjectInfo{Size: 3, ETag: `"e"`}, "etag", `etag="e";size=3`},
		{objstore.ObjectInfo{Size: 3, Dev: 1, Inode: 2, ModTime: mt}, "local_fingerprint", "dev=1;ino=2;size=3;mtime=2024-05-01T02:03:04.005Z"},
		{objstore.ObjectInfo{Size: 3, ModTime: mt}, "key_size_mtime", "size=3;mtime=2024-05-01T02:03:04.005Z"},
	} {
		if tc.info.RevisionKind() != tc.kind || tc.info.Ref() != tc.ref {
			t.Errorf("%+v: %s %s, want %s %s", tc.info, tc.info.RevisionKind(), tc.info.Ref(), tc.kind, tc.ref)
		}
	}
}
