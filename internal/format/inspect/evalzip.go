package inspect

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Entries of an .eval zip that Inspect writes.
const (
	headerJSON  = "header.json"         // the log header, written when the eval finishes
	startJSON   = "_journal/start.json" // version, eval and plan, written first
	samplesDir  = "samples/"
	shellJSON   = "sample.json"   // a chunked sample's own members
	sampleMeta  = "metadata.json" // a chunked sample's metadata
	zstdMethod  = 93              // zip compression method number of zstd
	epochMarker = "_epoch_"
)

// Bounds of what an entry (one sample, or one chunk of it) may inflate to
// in memory: an absolute size, a ratio to its compressed size beyond a
// floor (Inspect's JSON compresses 5 to 30 times; a thousandfold entry is a
// decompression bomb, not a log), and the query's document-memory budget
// for all the entries of one sample, which are alive together.
const (
	maxEntryBytes = 4 << 30
	maxRatio      = 200
	ratioFloor    = 64 << 20
)

// inflation bounds the entries of one .eval read into memory.
type inflation struct {
	ctx   context.Context // carries the document budget
	src   format.Source
	total int64 // bytes the entries of the current sample inflated to
}

// check fails when entry f, having inflated to n bytes, passes a bound.
func (in *inflation) check(f *zip.File, n int64) error {
	switch {
	case n > maxEntryBytes:
		return entryError(in.src, f.Name, fmt.Errorf("inflates to more than the %d bytes this reader holds in memory", int64(maxEntryBytes)))
	case n > ratioFloor && n > int64(f.CompressedSize64)*maxRatio:
		return entryError(in.src, f.Name, fmt.Errorf("inflates to %d bytes from %d compressed, more than %d times: refused as a decompression bomb", n, f.CompressedSize64, maxRatio))
	}
	return format.CheckDocument(in.ctx, in.src.Path+", entry "+f.Name, in.total+n)
}

// boundedEntry reads an entry's decompressed bytes, failing as soon as they
// pass a bound. archive/zip already refuses more bytes than the declared
// size, which check sees first; this holds whatever a decompressor does.
type boundedEntry struct {
	io.Reader
	in *inflation
	f  *zip.File
	n  int64
}

func (b *boundedEntry) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	b.n += int64(n)
	if bad := b.in.check(b.f, b.n); bad != nil {
		return n, bad
	}
	return n, err
}

// isLogEntry reports whether a zip entry name is one only Inspect writes at
// an .eval's top level.
func isLogEntry(name string) bool {
	switch name {
	case headerJSON, "summaries.json", "reductions.json":
		return true
	}
	if strings.HasPrefix(name, "_journal/") {
		return true
	}
	if rest, ok := strings.CutPrefix(name, samplesDir); ok {
		key, _, _ := strings.Cut(strings.TrimSuffix(rest, ".json"), "/")
		_, _, ok := sampleKey(key)
		return ok
	}
	return false
}

// sampleKey splits "<id>_epoch_<n>", the name Inspect gives a sample's
// entry (or folder).
func sampleKey(key string) (id string, epoch int64, ok bool) {
	i := strings.LastIndex(key, epochMarker)
	if i <= 0 {
		return "", 0, false
	}
	epoch, err := strconv.ParseInt(key[i+len(epochMarker):], 10, 64)
	return key[:i], epoch, err == nil
}

// evalSample is where one sample lives in the zip: a monolith entry
// (samples/<key>.json) or the entries of a chunked folder
// (samples/<key>/…).
type evalSample struct {
	key, id  string
	epoch    int64
	monolith *zip.File
	shell    *zip.File
	metadata *zip.File
	// Sequences of a chunked sample, by the index of their first item.
	messages, events, attachments map[int64]*zip.File
}

// readEval reads an .eval zip: the header, then each sample in Inspect's
// order (epoch, then id), one at a time.
func readEval(ctx context.Context, r io.Reader, src format.Source, emit format.Emit) error {
	sec, release, err := randomAccess(r, src)
	if err != nil {
		return err
	}
	defer release()
	zr, err := zip.NewReader(sec, sec.Size())
	if err != nil {
		return format.Errorf(src, 0, "", "not a readable zip archive (truncated or damaged .eval file?): %v", err)
	}
	// Recent Inspect versions compress entries with zstd (method 93), in
	// frames of at most 200 MiB of input each. The decompressor is this
	// reader's, never registered globally.
	zr.RegisterDecompressor(zstdMethod, zstdReader)
	files, samples := indexZip(zr.File)
	if len(samples) == 0 && files[headerJSON] == nil && files[startJSON] == nil {
		return format.Errorf(src, 0, "", "the zip has no %s, %s or %s… entries: not an Inspect eval log", headerJSON, startJSON, samplesDir)
	}
	in := &inflation{ctx: ctx, src: src}
	h, headerWarning, err := zipHeader(files, in)
	if err != nil {
		return err
	}
	for _, s := range samples {
		if err := ctx.Err(); err != nil {
			return err
		}
		in.total = 0 // a sample's entries are alive together, not the samples'
		d, err := s.load(in)
		if err != nil {
			return err
		}
		if headerWarning != "" {
			d.warnings = append(d.warnings, model.Warning{Message: headerWarning})
		}
		if err := emit(buildStoryline(d, &h, src)); err != nil {
			return err
		}
	}
	return nil
}

// indexZip maps entry names to entries (a name written again replaces the
// earlier entry, as Inspect reads a re-logged sample) and groups sample
// entries, sorted as Inspect sorts samples.
func indexZip(entries []*zip.File) (map[string]*zip.File, []*evalSample) {
	files := make(map[string]*zip.File, len(entries))
	for _, f := range entries {
		files[f.Name] = f
	}
	byKey := map[string]*evalSample{}
	get := func(key string) *evalSample {
		s := byKey[key]
		if s == nil {
			s = &evalSample{key: key}
			s.id, s.epoch, _ = sampleKey(key)
			byKey[key] = s
		}
		return s
	}
	for name, f := range files {
		rest, ok := strings.CutPrefix(name, samplesDir)
		if !ok {
			continue
		}
		key, inner, chunked := strings.Cut(rest, "/")
		if !chunked {
			if k, ok := strings.CutSuffix(key, ".json"); ok {
				get(k).monolith = f
			}
			continue
		}
		s := get(key)
		seq, item, _ := strings.Cut(inner, "/")
		switch {
		case inner == shellJSON:
			s.shell = f
		case inner == sampleMeta:
			s.metadata = f
		case item != "":
			start, err := strconv.ParseInt(strings.TrimSuffix(item, ".json"), 10, 64)
			if err != nil || !strings.HasSuffix(item, ".json") {
				continue // events/stats.json, events/uuids.json: derived indexes
			}
			switch seq {
			case "messages":
				s.messages = setChunk(s.messages, start, f)
			case "events":
				s.events = setChunk(s.events, start, f)
			case "attachments":
				s.attachments = setChunk(s.attachments, start, f)
			}
			// calls/ holds raw provider requests, which no column keeps;
			// skeleton.json is a derived index.
		}
	}
	samples := make([]*evalSample, 0, len(byKey))
	for _, s := range byKey {
		if s.monolith != nil || s.shell != nil {
			samples = append(samples, s)
		}
	}
	sort.Slice(samples, func(i, j int) bool {
		a, b := samples[i], samples[j]
		if a.epoch != b.epoch {
			return a.epoch < b.epoch
		}
		if ia, ib := sortID(a.id), sortID(b.id); ia != ib {
			return ia < ib
		}
		return a.key < b.key // names that are not <id>_epoch_<n>
	})
	return files, samples
}

func setChunk(m map[int64]*zip.File, start int64, f *zip.File) map[int64]*zip.File {
	if m == nil {
		m = map[int64]*zip.File{}
	}
	m[start] = f
	return m
}

// sortID orders sample ids as Inspect does: numbers zero-padded, so that
// 2 sorts before 10.
func sortID(id string) string {
	if _, err := strconv.ParseUint(id, 10, 64); err == nil && len(id) < 20 {
		return strings.Repeat("0", 20-len(id)) + id
	}
	return id
}

// zipHeader reads header.json, or _journal/start.json (version, eval and
// plan) for a log whose eval has not finished. When header.json cannot be
// read but start.json can, warning says so. A log with neither has an
// empty header (the builder warns about it).
func zipHeader(files map[string]*zip.File, in *inflation) (h header, warning string, err error) {
	var failed error
	for _, name := range []string{headerJSON, startJSON} {
		f := files[name]
		if f == nil {
			continue
		}
		obj, err := readObject(f, in, "the log header")
		if err != nil {
			if failed == nil {
				failed = err
			}
			continue
		}
		var parts headerParts
		for key := range headerKeys {
			if raw, ok := obj[key]; ok {
				parts.set(key, raw)
			}
		}
		if failed != nil {
			warning = fmt.Sprintf("%v; the header is read from %s", failed, name)
		}
		return newHeader(parts), warning, nil
	}
	return header{}, "", failed
}

// readEntry reads one entry whole and checks it is JSON.
func readEntry(f *zip.File, in *inflation) ([]byte, error) {
	if err := in.check(f, int64(min(f.UncompressedSize64, maxEntryBytes+1))); err != nil {
		return nil, err
	}
	rc, err := f.Open()
	if err != nil {
		if errors.Is(err, zip.ErrAlgorithm) {
			err = fmt.Errorf("compression method %d is not supported (stored, deflate and zstd are)", f.Method)
		}
		return nil, entryError(in.src, f.Name, err)
	}
	defer rc.Close()
	// The declared size is only a hint for the buffer (a damaged or hostile
	// header may claim gigabytes); reading past it fails in archive/zip.
	buf := bytes.NewBuffer(make([]byte, 0, min(f.UncompressedSize64, 64<<20)+1))
	if _, err := buf.ReadFrom(&boundedEntry{Reader: rc, in: in, f: f}); err != nil {
		var pe *format.ParseError
		var be *format.BudgetError
		if errors.As(err, &pe) || errors.As(err, &be) {
			return nil, err
		}
		return nil, entryError(in.src, f.Name, fmt.Errorf("damaged entry: %w", err))
	}
	in.total += int64(buf.Len())
	data, ok := validJSON(buf.Bytes())
	if !ok {
		var v jsonx.RawMessage
		pe := format.DocumentError(in.src, data, "inspect log entry", jsonx.Unmarshal(data, &v))
		return nil, entryError(in.src, f.Name, fmt.Errorf("line %d: %w", pe.Line, pe.Err))
	}
	return data, nil
}

// readObject reads an entry that must hold a JSON object (what names it
// in the error).
func readObject(f *zip.File, in *inflation, what string) (map[string]jsonx.RawMessage, error) {
	data, err := readEntry(f, in)
	if err != nil {
		return nil, err
	}
	obj := format.SplitObject(data)
	if obj == nil {
		return nil, entryError(in.src, f.Name, fmt.Errorf("%s must be a JSON object", what))
	}
	return obj, nil
}

// entryError locates an error in a zip entry: the pointer is the entry's
// path (a line inside the entry goes in the message).
func entryError(src format.Source, entry string, err error) error {
	return &format.ParseError{Path: src.Path, Pointer: entryPointer(entry), Err: err}
}

func entryPointer(entry string) string {
	return format.Pointer(entryParts(entry)...)
}

func entryParts(entry string) []any {
	names := strings.Split(entry, "/")
	parts := make([]any, len(names))
	for i, n := range names {
		parts[i] = n
	}
	return parts
}

// load reads the sample's entries into a sampleData.
func (s *evalSample) load(in *inflation) (*sampleData, error) {
	if s.monolith != nil {
		data, err := readEntry(s.monolith, in)
		if err != nil {
			return nil, err
		}
		i := jsonx.SkipWS(data, 0)
		if i >= len(data) || data[i] != '{' {
			return nil, entryError(in.src, s.monolith.Name, errors.New("an inspect sample must be a JSON object"))
		}
		d, _ := splitSample(data, i, LayoutEval, entryParts(s.monolith.Name))
		return d, nil
	}
	return s.loadChunked(in)
}

// loadChunked puts a chunked sample together: the shell holds its members
// except metadata (its own entry), messages, events and attachments, which
// are sequences split into chunks named by their first index. The message
// sequence is the pool model events' input_refs index; the shell's
// message_refs select the final conversation from it. Attachments are
// referenced by their index in their sequence.
func (s *evalSample) loadChunked(in *inflation) (*sampleData, error) {
	obj, err := readObject(s.shell, in, "an inspect sample")
	if err != nil {
		return nil, err
	}
	base := entryParts(samplesDir + s.key)
	d := &sampleData{fields: obj, layout: layoutEvalChunked, atSample: entryParts(s.shell.Name)}
	if s.metadata != nil {
		meta, err := readEntry(s.metadata, in)
		if err != nil {
			return nil, err
		}
		obj["metadata"] = meta
	}
	var poolAt, eventsAt func(int) []any
	if d.pool, poolAt, err = sequence(s.messages, "messages", base, in, &d.warnings); err != nil {
		return nil, err
	}
	if d.events, eventsAt, err = sequence(s.events, "events", base, in, &d.warnings); err != nil {
		return nil, err
	}
	if d.attach.byIndex, _, err = sequence(s.attachments, "attachments", base, in, &d.warnings); err != nil {
		return nil, err
	}
	if d.attach.byIndex == nil {
		d.attach.byIndex = [][]byte{} // references are indexes even with no attachments
	}
	d.atEvent = eventsAt
	var picked []int
	if refs, ok := format.SplitArray(obj["message_refs"]); ok {
		for _, r := range refs {
			pair, _ := format.SplitArray(r)
			var lo, hi int64
			ok := len(pair) == 2
			if ok {
				lo, ok = format.Int(pair[0])
			}
			if ok {
				hi, ok = format.Int(pair[1])
			}
			if !ok || lo < 0 || hi < lo || hi > int64(len(d.pool)) {
				d.warnings = append(d.warnings, model.Warning{Pointer: entryPointer(s.shell.Name) + "/message_refs",
					Message: fmt.Sprintf("message range %s is outside the %d pooled messages; skipped", r, len(d.pool))})
				continue
			}
			for k := lo; k < hi; k++ {
				picked = append(picked, int(k))
				d.messages = append(d.messages, d.pool[k])
			}
		}
	} else if msgs, ok := format.SplitArray(obj["messages"]); ok {
		d.messages = msgs // written inline: no pool positions
		d.atMessage = func(i int) []any { return at(entryParts(s.shell.Name), "messages", i) }
	}
	if d.atMessage == nil {
		d.atMessage = func(i int) []any { return poolAt(picked[i]) }
	}
	return d, nil
}

// sequence concatenates a chunked sequence's chunks (each a JSON array) in
// index order. A chunk that does not start where the previous one ended
// is read where it is, with a warning. locate gives an item's pointer.
func sequence(chunks map[int64]*zip.File, name string, base []any, in *inflation, warnings *[]model.Warning) (items [][]byte, locate func(int) []any, err error) {
	starts := make([]int64, 0, len(chunks))
	for start := range chunks {
		starts = append(starts, start)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	type place struct {
		start int64 // the chunk's first index, its entry's name
		pos   int   // the item's position in the chunk
	}
	var places []place
	for _, start := range starts {
		f := chunks[start]
		data, err := readEntry(f, in)
		if err != nil {
			return nil, nil, err
		}
		elems, ok := format.SplitArray(data)
		if !ok {
			return nil, nil, entryError(in.src, f.Name, fmt.Errorf("a %s chunk must be a JSON array", name))
		}
		if start != int64(len(items)) {
			*warnings = append(*warnings, model.Warning{Pointer: entryPointer(f.Name),
				Message: fmt.Sprintf("%s chunk %d follows %d items: the sequence has a gap or an overlap; read in order", name, start, len(items))})
		}
		for pos := range elems {
			places = append(places, place{start, pos})
		}
		items = append(items, elems...)
	}
	locate = func(i int) []any {
		if i < 0 || i >= len(places) {
			return at(base, name)
		}
		return at(base, name, strconv.FormatInt(places[i].start, 10)+".json", places[i].pos)
	}
	return items, locate, nil
}

// zstdReader is the zip decompressor for method 93: a streaming decoder per
// entry, without goroutines, closed with the entry.
func zstdReader(r io.Reader) io.ReadCloser {
	d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		return errReader{err}
	}
	return d.IOReadCloser()
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
func (e errReader) Close() error             { return nil }
