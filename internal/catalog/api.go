package catalog

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"

	"github.com/pchronicle/pchronicle/internal/model"
)

// The control-plane API of a Snapshot (docs/api.md): read one Storyline by its
// full identity (dataset, _file_, session_id), and page through namespaces
// and sources. Everything answers from the pinned Snapshot; nothing is
// rediscovered, so one response never splices two versions.

// ErrNotFound is wrapped by every API error about a Dataset, source or
// Storyline that the Snapshot does not hold.
var ErrNotFound = errors.New("not found")

// ErrPageToken is wrapped by every page-token error (see PageTokenError).
var ErrPageToken = errors.New("invalid page token")

// PageTokenError rejects a page token that is malformed, belongs to another
// listing, or was issued by another Snapshot (Stale): tokens cannot be
// reused after a refresh, because offsets into another member list would
// skip or repeat sources.
type PageTokenError struct {
	Reason string
	Stale  bool
}

func (e *PageTokenError) Error() string { return "invalid page token: " + e.Reason }

// Is makes errors.Is(err, ErrPageToken) hold.
func (e *PageTokenError) Is(target error) bool { return target == ErrPageToken }

// Page sizes of the listing calls.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// pageToken is the decoded form of an opaque page token: the Snapshot and
// listing it belongs to and the offset of the next item.
type pageToken struct {
	Snapshot string `json:"s"`
	Listing  string `json:"l"`
	Offset   int    `json:"o"`
}

func (s *Snapshot) encodeToken(listing string, offset int) string {
	b, _ := json.Marshal(pageToken{Snapshot: s.ID, Listing: listing, Offset: offset}) // cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeToken returns the offset a token resumes at ("" starts at 0),
// rejecting tokens of other Snapshots or listings and offsets outside
// [0, total).
func (s *Snapshot) decodeToken(token, listing string, total int) (int, error) {
	if token == "" {
		return 0, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0, &PageTokenError{Reason: "not a token issued by pchronicle"}
	}
	var t pageToken
	if err := json.Unmarshal(raw, &t); err != nil || t.Snapshot == "" {
		return 0, &PageTokenError{Reason: "not a token issued by pchronicle"}
	}
	if t.Snapshot != s.ID {
		return 0, &PageTokenError{Stale: true, Reason: fmt.Sprintf("issued by Snapshot %s, not %s; restart the listing", t.Snapshot, s.ID)}
	}
	if t.Listing != listing {
		return 0, &PageTokenError{Reason: fmt.Sprintf("issued for listing %q, not %q", t.Listing, listing)}
	}
	if t.Offset <= 0 || t.Offset >= total {
		return 0, &PageTokenError{Reason: fmt.Sprintf("offset %d out of range", t.Offset)}
	}
	return t.Offset, nil
}

// page cuts [offset, offset+size) out of n items and returns the bounds and
// the next token ("" on the last page).
func (s *Snapshot) page(listing string, n, pageSize int, token string) (lo, hi int, next string, err error) {
	lo, err = s.decodeToken(token, listing, n)
	if err != nil {
		return 0, 0, "", err
	}
	switch {
	case pageSize <= 0:
		pageSize = DefaultPageSize
	case pageSize > MaxPageSize:
		pageSize = MaxPageSize
	}
	hi = min(lo+pageSize, n)
	if hi < n {
		next = s.encodeToken(listing, hi)
	}
	return lo, hi, next, nil
}

// ListNamespaces pages through the namespace paths of the mounted Datasets
// ("team/prod"), in byte order. pageSize <= 0 means DefaultPageSize; more
// than MaxPageSize is capped.
func (s *Snapshot) ListNamespaces(pageSize int, pageToken string) (items []string, next string, err error) {
	all := make([]string, len(s.Datasets))
	for i, d := range s.Datasets {
		all[i] = d.Mount.NamespacePath()
	}
	sort.Strings(all)
	lo, hi, next, err := s.page("namespaces", len(all), pageSize, pageToken)
	if err != nil {
		return nil, "", err
	}
	return all[lo:hi], next, nil
}

// ListSources pages through one Dataset's sources in the Snapshot's stable
// source order. dataset is a namespace path or a SQL alias.
func (s *Snapshot) ListSources(dataset string, pageSize int, pageToken string) ([]model.SourceRow, string, error) {
	d, err := s.lookupDataset(dataset)
	if err != nil {
		return nil, "", err
	}
	lo, hi, next, err := s.page("sources:"+d.Mount.NamespacePath(), len(d.Sources), pageSize, pageToken)
	if err != nil {
		return nil, "", err
	}
	return d.sourceRows(d.Sources[lo:hi]), next, nil
}

// DescribeSource returns the sources row of one source.
func (s *Snapshot) DescribeSource(dataset, file string) (model.SourceRow, error) {
	d, err := s.lookupDataset(dataset)
	if err != nil {
		return model.SourceRow{}, err
	}
	if src, ok := d.Source(file); ok {
		return d.sourceRow(src), nil
	}
	return model.SourceRow{}, fmt.Errorf("Dataset %s: source %q: %w", d.Mount.NamespacePath(), file, ErrNotFound)
}

// lookupDataset finds a Dataset by namespace path, else by SQL alias (the
// two are separate fields; the namespace wins if both could match).
func (s *Snapshot) lookupDataset(name string) (*Dataset, error) {
	for _, d := range s.Datasets {
		if d.Mount.NamespacePath() == name {
			return d, nil
		}
	}
	if d, ok := s.Dataset(name); ok {
		return d, nil
	}
	return nil, fmt.Errorf("Dataset %q: %w", name, ErrNotFound)
}

// LookupSource finds a source by Dataset (namespace path or alias) and
// _file_.
func (s *Snapshot) LookupSource(dataset, file string) (*Source, error) {
	d, err := s.lookupDataset(dataset)
	if err != nil {
		return nil, err
	}
	if src, ok := d.Source(file); ok {
		return src, nil
	}
	return nil, fmt.Errorf("Dataset %s: source %q: %w", d.Mount.NamespacePath(), file, ErrNotFound)
}

// LoadEvents returns the canonical events of one session of a canonical
// events source, in seq order, read from the pinned revision. Only
// canonical events sources have events: they are never forged from a
// Storyline (spec invariant 6).
func (s *Snapshot) LoadEvents(ctx context.Context, dataset, file, sessionID string) ([]model.Event, error) {
	src, err := s.eventsSource(dataset, file)
	if err != nil {
		return nil, err
	}
	var out []model.Event
	want := map[string]bool{sessionID: true}
	rev, err := src.pinnedEvents(ctx, want) // remote.go: local revision, or the remote segments that may hold it
	if err != nil {
		return nil, err
	}
	err = rev.ScanSessions(ctx, map[string]bool{sessionID: true}, func(_ string, evs []model.Event) error {
		out = append(out, evs...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", file, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("session %q in events source %s: %w", sessionID, file, ErrNotFound)
	}
	for i := range out {
		out[i].File = src.File
	}
	return out, nil
}

// CanonicalEventURI returns where a Storyline of a canonical events source
// physically lives: the store's absolute path plus "#session=<id>" (the id
// query-escaped). It does not check that the session has events yet, so a
// writer can use it for a new session.
func (s *Snapshot) CanonicalEventURI(dataset, file, sessionID string) (string, error) {
	if sessionID == "" {
		return "", errors.New("empty session_id")
	}
	src, err := s.eventsSource(dataset, file)
	if err != nil {
		return "", err
	}
	return src.Path + "#session=" + url.QueryEscape(sessionID), nil
}

// eventsSource finds a ready canonical events source.
func (s *Snapshot) eventsSource(dataset, file string) (*Source, error) {
	src, err := s.LookupSource(dataset, file)
	if err != nil {
		return nil, err
	}
	if src.Kind != KindEvents && src.Kind != KindCompact {
		return nil, fmt.Errorf("source %s is a %s source: canonical events exist only in events stores (events.lance) and compact sources: %w", file, src.Kind, ErrNotFound)
	}
	if src.Err != nil {
		return nil, fmt.Errorf("source %s: %w", file, src.Err)
	}
	return src, nil
}
