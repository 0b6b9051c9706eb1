package objstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/objstore/testservers"
)

// These tests measure the server quirks the backends work around, with
// the raw SDKs, so a server upgrade that changes them is noticed.

func rawS3(srv *testservers.Server) *s3.Client {
	return s3.New(s3.Options{Region: srv.Region, BaseEndpoint: aws.String(srv.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, "")})
}

func TestQuirkVersitygwVersionPages(t *testing.T) {
	srv := testservers.StartS3(t)
	name := srv.NewS3Bucket(t, true)
	b := openWith(t, "s3://"+name, srv.S3Config(), nil)
	for i := 0; i < 10; i++ {
		put(t, b, fmt.Sprintf("k%02d", i), "a")
		put(t, b, fmt.Sprintf("k%02d", i), "bb")
	}
	client := rawS3(srv)
	in := &s3.ListObjectVersionsInput{Bucket: &name, MaxKeys: aws.Int32(3)}
	seen := map[string]int{}
	entries := 0
	for {
		page, err := client.ListObjectVersions(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range page.Versions {
			seen[*v.Key+"@"+*v.VersionId]++
			entries++
		}
		if !aws.ToBool(page.IsTruncated) {
			break
		}
		in.KeyMarker, in.VersionIdMarker = page.NextKeyMarker, page.NextVersionIdMarker
	}
	repeats := entries - len(seen)
	t.Logf("versitygw: %d version entries for %d versions at 3 per page (%d repeated at page boundaries)", entries, len(seen), repeats)
	if got := keys(list(t, b, "")); len(got) != 10 {
		t.Fatalf("our listing: %v", got)
	}
	// If-Match with a stale ETag is refused by the server itself.
	_, err := client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: &name, Key: aws.String("k00"), IfMatch: aws.String(`"0123456789abcdef0123456789abcdef"`)})
	t.Logf("versitygw: GetObject with a stale If-Match: %v", err)
	if err == nil {
		t.Fatal("versitygw served a stale If-Match")
	}
}

func TestQuirkFakeGCSGenerationPreconditions(t *testing.T) {
	srv := testservers.StartGCS(t)
	name := srv.NewGCSBucket(t)
	b := openWith(t, "gs://"+name, srv.GCSConfig(), nil)
	old := put(t, b, "o.json", "old")
	put(t, b, "o.json", "new")
	read := func(q url.Values) string {
		q.Set("alt", "media")
		resp, err := http.Get(srv.Endpoint + "/storage/v1/b/" + name + "/o/o.json?" + q.Encode())
		if err != nil {
			return "error: " + err.Error()
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Sprintf("%s %q", resp.Status, strings.TrimSpace(string(data)))
		}
		return fmt.Sprintf("%q (generation %s)", data, resp.Header.Get("X-Goog-Generation"))
	}
	gen := fmt.Sprint(old.Generation)
	t.Logf("fake-gcs: read with ifGenerationMatch=%s (stale): %s", gen, read(url.Values{"ifGenerationMatch": {gen}}))
	t.Logf("fake-gcs: read of generation %s (overwritten): %s", gen, read(url.Values{"generation": {gen}}))
	if _, err := readAll(b, old); !errors.Is(err, objstore.ErrChanged) {
		t.Fatalf("our pinned read: %v", err)
	}
}

func TestQuirkAzuriteNoVersionIDs(t *testing.T) {
	srv := testservers.StartAzurite(t)
	b := openWith(t, "az://"+srv.NewAzureContainer(t), srv.AzureConfig(), nil)
	put(t, b, "a.json", "1")
	o := list(t, b, "")[0]
	t.Logf("azurite listing: etag=%s kind=%s", o.ETag, o.RevisionKind())
	if o.RevisionKind() != objstore.KindETag || strings.TrimSpace(o.ETag) == "" {
		t.Fatalf("%+v", o)
	}
}
