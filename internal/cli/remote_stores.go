package cli

// Object-store destinations of `import --to` and `events append STORE`
// (s3://, az://, gs:// URIs and @pins naming them): the local code paths
// run on a local staging copy, then internal/store/remote publishes it.

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/config"
	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/store/remote"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

// remoteDest is an opened object-store destination.
type remoteDest struct {
	bucket  objstore.Bucket
	prefix  string
	uri     string // redacted, for messages
	staging string // local staging directory of an import, removed by Close
	current *objstore.ObjectInfo
}

// openDest resolves ref (a path, a URI or a @pin from the config file at
// configPath). An object-store URI opens its Bucket with the pin's
// settings (or the SDK default chain); anything else is returned as the
// local path to use, with a nil remoteDest.
func openDest(ctx context.Context, configPath, ref string) (*remoteDest, string, error) {
	cfg, err := config.Load(configPath)
	if err != nil {
		return nil, "", err
	}
	p, err := cfg.ResolvePin(ref)
	if err != nil {
		return nil, "", err
	}
	if !objstore.IsRemote(p.URI) {
		return nil, p.URI, nil
	}
	b, prefix, err := objstore.Open(ctx, p.URI, p.Store())
	if err != nil {
		return nil, "", err
	}
	return &remoteDest{bucket: b, prefix: prefix, uri: catalog.RedactURI(p.URI)}, "", nil
}

func (d *remoteDest) Close() {
	if d.staging != "" {
		os.RemoveAll(d.staging)
	}
	d.bucket.Close()
}

// stageImport prepares the local staging store of an import (seeded with
// the remote current generation in append mode).
func (d *remoteDest) stageImport(ctx context.Context, seed bool) (*storyline.Store, error) {
	dir, err := os.MkdirTemp("", "pchronicle-import-")
	if err != nil {
		return nil, err
	}
	d.staging = dir
	s, err := remote.StageStoryline(ctx, d.bucket, d.prefix, dir, seed)
	if err != nil {
		return nil, err
	}
	d.current = s.Current
	return s.Store, nil
}

// publish uploads the committed staging generation and makes it current.
func (d *remoteDest) publish(ctx context.Context, g *storyline.Generation) error {
	return remote.PublishStoryline(ctx, d.bucket, d.prefix, g, d.current)
}

// appendEvents runs `events append` against the remote store.
func (d *remoteDest) appendEvents(ctx context.Context, e *env, in io.Reader, src format.Source) error {
	res, err := remote.AppendEvents(ctx, d.bucket, d.prefix, in, src, remote.AppendOptions{SegmentCache: remote.DefaultSegmentCache()})
	if err != nil {
		return fmt.Errorf("nothing appended: %w", err)
	}
	fmt.Fprintf(e.stderr, "appended %d events to %s (revision %d, %d events in total)\n", res.Appended, d.uri, res.Manifest.Revision, res.Manifest.Events)
	return nil
}
