// Package remote publishes Storyline and canonical events stores to
// object-store prefixes (s3://, az://, gs://) in exactly the layout the
// local stores use, so the catalog reads them back like any remote store.
//
// Object stores have no rename and no lock, so publication follows one
// rule: immutable objects first, each written only if absent, then the one
// mutable pointer (CURRENT or _manifest.json) with a conditional write
// against the version seen before the write. Two concurrent publishers can
// therefore not both win, and a loser's objects are never referenced.
// docs/object-stores.md ("Writing to object stores") documents the
// protocol and its guarantees per backend.
package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/pchronicle/pchronicle/internal/objstore"
	"github.com/pchronicle/pchronicle/internal/store"
	"github.com/pchronicle/pchronicle/internal/store/storyline"
)

// ErrLostRace is matched by the error of a publication whose pointer
// (CURRENT or _manifest.json) another writer replaced after this one read
// it: nothing of the losing publication is visible. It is
// store.ErrLostRace, which local writers return too.
var ErrLostRace = store.ErrLostRace

// maxPointerBytes bounds reads of CURRENT and manifests: small documents.
const maxPointerBytes = 64 << 20

// Join makes a key under prefix ("" or any prefix; a '/' is inserted when
// prefix does not end in one).
func Join(prefix string, rel ...string) string {
	p := strings.TrimSuffix(prefix, "/")
	if p == "" {
		return path.Join(rel...)
	}
	return p + "/" + path.Join(rel...)
}

// Staged is a local staging store for a publication to a remote Storyline
// store: generations are written locally with the ordinary writer, then
// published with PublishStoryline.
type Staged struct {
	Store   *storyline.Store
	Current *objstore.ObjectInfo // the remote CURRENT seen when staging; nil for a new store
}

// StageStoryline prepares dir (an empty local directory) for a new
// generation of the remote store at prefix. The next local generation
// number is made one more than any generation present under the prefix
// (published or orphaned by an interrupted publication), so the new
// generation's objects never collide with existing ones. With seed, the
// remote current generation is downloaded into dir and made current there,
// so append-mode imports can copy its rows (Writer.CopyFrom).
func StageStoryline(ctx context.Context, b objstore.Bucket, prefix, dir string, seed bool) (*Staged, error) {
	cur, name, err := readCurrent(ctx, b, prefix)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		if err := checkTarget(ctx, b, prefix); err != nil {
			return nil, err
		}
	}
	highest, err := highestGeneration(ctx, b, prefix)
	if err != nil {
		return nil, err
	}
	if cur != nil && seed {
		if err := downloadGeneration(ctx, b, prefix, name, dir); err != nil {
			return nil, err
		}
	}
	if highest != "" && !(seed && highest == name) {
		// An empty directory with the highest remote name makes the local
		// writer number the next generation past it (storyline picks one
		// more than any gen-* entry); it is never made current here.
		if err := os.MkdirAll(filepath.Join(dir, highest), 0o755); err != nil {
			return nil, err
		}
	}
	st, err := storyline.Prepare(dir)
	if err != nil {
		return nil, err
	}
	return &Staged{Store: st, Current: cur}, nil
}

// checkTarget refuses a prefix that is not a store yet but holds objects
// other than what an interrupted first publication leaves (gen-*/...):
// publishing CURRENT there would make discovery read the prefix as the
// store from then on, and never again the user's objects under it. It
// lists only until it has found a few.
func checkTarget(ctx context.Context, b objstore.Bucket, prefix string) error {
	base := strings.TrimSuffix(prefix, "/")
	if base != "" {
		base += "/"
	}
	const shown = 3
	errEnough := errors.New("enough")
	var foreign []string
	err := b.List(ctx, base, func(o objstore.ObjectInfo) error {
		rel := strings.TrimPrefix(o.Key, base)
		if first, _, _ := strings.Cut(rel, "/"); strings.Contains(rel, "/") {
			if _, ok := storyline.ParseGenerationName(first); ok {
				return nil
			}
		}
		if foreign = append(foreign, rel); len(foreign) > shown {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return err
	}
	if len(foreign) == 0 {
		return nil
	}
	list := strings.Join(foreign[:min(len(foreign), shown)], ", ")
	if len(foreign) > shown {
		list += ", …"
	}
	return fmt.Errorf("%s/%s is not empty and not a Storyline store (it holds %s): a store is a prefix pchronicle owns, so name a new or empty one",
		b, base, list)
}

// readCurrent stats and reads <prefix>/CURRENT; a missing one is a new
// store (nil info, no error).
func readCurrent(ctx context.Context, b objstore.Bucket, prefix string) (*objstore.ObjectInfo, string, error) {
	info, err := b.Stat(ctx, Join(prefix, storyline.CurrentFile))
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	data, err := readSmall(ctx, b, info)
	if err != nil {
		return nil, "", err
	}
	name := strings.TrimSuffix(string(data), "\n")
	if _, ok := storyline.ParseGenerationName(name); !ok {
		return nil, "", fmt.Errorf("%s/%s: corrupt CURRENT %.40q", b, info.Key, name)
	}
	return &info, name, nil
}

// highestGeneration lists <prefix>/gen-* and returns the highest
// generation directory name found ("" when there is none).
func highestGeneration(ctx context.Context, b objstore.Bucket, prefix string) (string, error) {
	base := strings.TrimSuffix(prefix, "/")
	if base != "" {
		base += "/"
	}
	var best int64 = -1
	var bestName string
	err := b.List(ctx, base+"gen-", func(o objstore.ObjectInfo) error {
		name, _, _ := strings.Cut(strings.TrimPrefix(o.Key, base), "/")
		if n, ok := storyline.ParseGenerationName(name); ok && n > best {
			best, bestName = n, name
		}
		return nil
	})
	return bestName, err
}

// downloadGeneration mirrors generation name (manifest and tables) into
// dir and points dir/CURRENT at it.
func downloadGeneration(ctx context.Context, b objstore.Bucket, prefix, name, dir string) error {
	mInfo, err := b.Stat(ctx, Join(prefix, name, storyline.ManifestFile))
	if err != nil {
		return err
	}
	genDir := filepath.Join(dir, name)
	if err := objstore.Download(ctx, b, mInfo, filepath.Join(genDir, storyline.ManifestFile)); err != nil {
		return err
	}
	var m storyline.Manifest
	if data, err := os.ReadFile(filepath.Join(genDir, storyline.ManifestFile)); err != nil {
		return err
	} else if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("%s/%s: corrupt manifest: %w", b, mInfo.Key, err)
	}
	for _, rel := range storyline.Tables {
		file := m.Tables[rel].File
		if file == "" || file != path.Base(file) || file == ".." {
			return fmt.Errorf("%s/%s: corrupt manifest: table %q missing or badly named", b, mInfo.Key, rel)
		}
		info, err := b.Stat(ctx, Join(prefix, name, file))
		if err != nil {
			return err
		}
		if err := objstore.Download(ctx, b, info, filepath.Join(genDir, file)); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, storyline.CurrentFile), []byte(name+"\n"), 0o644); err != nil {
		return err
	}
	// The local reader validates the mirror (manifest, sizes) before use.
	st, err := storyline.Open(dir)
	if err == nil {
		_, err = st.Pin()
	}
	return err
}

// PublishStoryline uploads gen (a committed local generation) under
// <prefix>/<gen-name>/ — the tables, then manifest.json, each only if
// absent — and then makes it current by writing <prefix>/CURRENT last:
// PutIfAbsent when prevCurrent is nil (a new store), else PutIfMatch
// against prevCurrent, the CURRENT seen before the generation was built.
// A lost race returns an error matching ErrLostRace and leaves the
// uploaded generation unreferenced. A backend without conditional puts
// gets plain puts (last writer wins; see docs/object-stores.md).
func PublishStoryline(ctx context.Context, b objstore.Bucket, prefix string, gen *storyline.Generation, prevCurrent *objstore.ObjectInfo) error {
	files := make([]string, 0, len(storyline.Tables)+1)
	for _, rel := range storyline.Tables {
		files = append(files, gen.Manifest.Tables[rel].File)
	}
	files = append(files, storyline.ManifestFile)
	for _, f := range files {
		key := Join(prefix, gen.Name(), f)
		if err := uploadNew(ctx, b, key, filepath.Join(gen.Dir, f)); err != nil {
			if errors.Is(err, objstore.ErrPrecondition) {
				return fmt.Errorf("publish %s/%s: %s already exists (another writer is publishing the same generation): %w", b, key, gen.Name(), ErrLostRace)
			}
			return publishErr(b, key, err)
		}
	}
	return putPointer(ctx, b, Join(prefix, storyline.CurrentFile), []byte(gen.Name()+"\n"), prevCurrent)
}

// uploadNew uploads a local file to key only if key is absent (when the
// backend can tell).
func uploadNew(ctx context.Context, b objstore.Bucket, key, local string) error {
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if cp, ok := b.(objstore.ConditionalPutter); ok {
		_, err = cp.PutIfAbsent(ctx, key, f, st.Size())
	} else {
		_, err = b.Put(ctx, key, f, st.Size())
	}
	return err
}

// putPointer writes a store's pointer object conditionally: absent when
// prev is nil, else still the version prev pins. Once ctx is done (Ctrl-C,
// SIGTERM) it publishes nothing.
func putPointer(ctx context.Context, b objstore.Bucket, key string, data []byte, prev *objstore.ObjectInfo) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("publish %s/%s: not published: %w", b, key, err)
	}
	r, size := bytes.NewReader(data), int64(len(data))
	var err error
	cp, ok := b.(objstore.ConditionalPutter)
	switch {
	case !ok:
		_, err = b.Put(ctx, key, r, size)
	case prev == nil:
		_, err = cp.PutIfAbsent(ctx, key, r, size)
	default:
		_, err = cp.PutIfMatch(ctx, *prev, r, size)
	}
	if errors.Is(err, objstore.ErrPrecondition) {
		return fmt.Errorf("publish %s/%s: it changed since this writer read it; nothing was published (retry): %w", b, key, ErrLostRace)
	}
	if err != nil {
		return publishErr(b, key, err)
	}
	return nil
}

// publishErr names the object whose upload failed, unless err (an
// *objstore.Error) already does.
func publishErr(b objstore.Bucket, key string, err error) error {
	var oe *objstore.Error
	if errors.As(err, &oe) {
		return fmt.Errorf("publish: %w", err)
	}
	return fmt.Errorf("publish %s/%s: %w", b, key, err)
}

func readSmall(ctx context.Context, b objstore.Bucket, info objstore.ObjectInfo) ([]byte, error) {
	if info.Size > maxPointerBytes {
		return nil, fmt.Errorf("%s/%s: %d bytes is too large for a store pointer or manifest", b, info.Key, info.Size)
	}
	rc, err := b.ReadPinned(ctx, info)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}
