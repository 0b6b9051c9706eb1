package objstore_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/objstore/testservers"
)

// BenchmarkList10k lists 10,000 objects on versitygw through our lister and
// through a bare SDK paginator loop, in the same run and on the same
// bucket; the ratio of the two ns/op is the lister's overhead.
func BenchmarkList10k(b *testing.B) {
	const n = 10_000
	srv := testservers.StartS3(b)
	name := srv.NewS3Bucket(b, false)
	bucket := openBench(b, "s3://"+name, srv.S3Config())
	fill(b, bucket, n)
	client := rawS3(srv)
	b.Run("objstore", func(b *testing.B) {
		for b.Loop() {
			count := 0
			if err := bucket.List(context.Background(), "", func(objstore.ObjectInfo) error { count++; return nil }); err != nil || count != n {
				b.Fatalf("listed %d: %v", count, err)
			}
		}
	})
	b.Run("sdk", func(b *testing.B) {
		for b.Loop() {
			count := 0
			p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(name), Prefix: aws.String("")})
			for p.HasMorePages() {
				page, err := p.NextPage(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				count += len(page.Contents)
			}
			if count != n {
				b.Fatalf("listed %d", count)
			}
		}
	})
}

func openBench(b *testing.B, uri string, cfg objstore.Config) objstore.Bucket {
	bucket, _, err := objstore.Open(context.Background(), uri, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { bucket.Close() })
	return bucket
}

func fill(b *testing.B, bucket objstore.Bucket, n int) {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				key := fmt.Sprintf("runs/%02d/%05d.json", i%50, i)
				if _, err := bucket.Put(context.Background(), key, strings.NewReader("{}"), 2); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkListBound1M fails a 1,000,000-key listing at max_entries
// (999,999) against the in-process page generator and reports the peak Go
// heap seen while listing: it must stay flat, not grow with the listing.
func BenchmarkListBound1M(b *testing.B) {
	srv := &pageServer{n: 1_000_000}
	bucket := openBench(b, "s3://gen", srv.start(b))
	for b.Loop() {
		runtime.GC()
		var peak uint64
		var ms runtime.MemStats
		seen := 0
		err := bucket.List(context.Background(), "", func(objstore.ObjectInfo) error {
			if seen++; seen%20_000 == 0 {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
			if seen > 999_999 {
				return errTooMany
			}
			return nil
		})
		if err != errTooMany || seen != 1_000_000 {
			b.Fatalf("seen %d: %v", seen, err)
		}
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		b.ReportMetric(float64(ms.Sys)/(1<<20), "sys-MB")
	}
}
