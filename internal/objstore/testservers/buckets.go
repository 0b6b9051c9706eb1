package testservers

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/pchronicle/pchronicle/internal/objstore"
)

var bucketSeq atomic.Int64

func bucketName() string { return fmt.Sprintf("pchronicle-test-%d", bucketSeq.Add(1)) }

// S3Config is the objstore configuration reaching the versitygw server.
func (s *Server) S3Config() objstore.Config {
	return objstore.Config{Endpoint: s.Endpoint, Region: s.Region, PathStyle: true, AccessKey: s.AccessKey, SecretKey: objstore.Secret(s.SecretKey)}
}

// AzureConfig is the objstore configuration reaching Azurite.
func (s *Server) AzureConfig() objstore.Config {
	return objstore.Config{Endpoint: s.Endpoint, Account: s.AccessKey, SecretKey: objstore.Secret(s.SecretKey)}
}

// GCSConfig is the objstore configuration reaching fake-gcs-server.
func (s *Server) GCSConfig() objstore.Config {
	return objstore.Config{Endpoint: s.Endpoint}
}

// NewS3Bucket creates a fresh bucket, versioned if asked, and returns its
// name.
func (s *Server) NewS3Bucket(t testing.TB, versioned bool) string {
	t.Helper()
	ctx := context.Background()
	cfg := s.S3Config()
	client := s3.New(s3.Options{
		Region: cfg.Region, BaseEndpoint: aws.String(cfg.Endpoint), UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: s.AccessKey, SecretAccessKey: s.SecretKey}, nil
		}),
	})
	name := bucketName()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &name}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	if versioned {
		_, err := client.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: &name,
			VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}})
		if err != nil {
			t.Fatalf("enable versioning on %s: %v", name, err)
		}
	}
	return name
}

// NewAzureContainer creates a fresh container and returns its name.
func (s *Server) NewAzureContainer(t testing.TB) string {
	t.Helper()
	name := strings.ReplaceAll(bucketName(), "_", "-")
	cred, err := container.NewSharedKeyCredential(s.AccessKey, s.SecretKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := container.NewClientWithSharedKeyCredential(s.Endpoint+"/"+name, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(context.Background(), nil); err != nil {
		t.Fatalf("create container %s: %v", name, err)
	}
	return name
}

// NewGCSBucket creates a fresh bucket (buckets.insert on the JSON API)
// and returns its name.
func (s *Server) NewGCSBucket(t testing.TB) string {
	t.Helper()
	name := bucketName()
	u := s.Endpoint + "/storage/v1/b?" + url.Values{"project": {"pchronicle-test"}}.Encode()
	resp, err := http.Post(u, "application/json", strings.NewReader(fmt.Sprintf(`{"name":%q}`, name)))
	if err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		t.Fatalf("create bucket %s: %s: %s", name, resp.Status, msg)
	}
	return name
}
