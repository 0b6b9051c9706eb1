package config

// Directory pins: a pin whose uri is a catalog://IP:PORT locator names a
// Directory, not a Dataset. @team/NAME exchanges the pin's user keys for the
// ticket of the Directory's dataset NAME and opens the ticket's path with
// the ticket's backend settings; those are never written to the config
// (docs/directory.md).

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/pchronicle/pchronicle/internal/directory"
	"github.com/pchronicle/pchronicle/internal/objstore"
)

// IsCatalog reports whether the pin names a Directory (catalog://).
func (p Pin) IsCatalog() bool {
	return strings.HasPrefix(strings.ToLower(p.URI), directory.LocatorScheme+":")
}

// NormalizeCatalogPin checks a Directory pin before it is saved: the
// locator's rules (directory.ParseLocator), user keys given both or not at
// all (none: anonymous, public datasets only), and no object-store settings,
// which come from each ticket instead.
func NormalizeCatalogPin(p Pin) (Pin, error) {
	loc, err := directory.ParseLocator(p.URI)
	if err != nil {
		return Pin{}, err
	}
	if p.Endpoint != "" || p.Region != "" || p.PathStyle || p.Account != "" || p.Format != "" {
		return Pin{}, errors.New("a catalog:// pin takes only --ak and --sk: --endpoint, --region, --path-style, --account and --format come from the Directory's tickets")
	}
	if (p.AccessKey == "") != (p.SecretKey == "") {
		return Pin{}, errors.New("a catalog:// pin needs both --ak and --sk (or neither, for the public datasets only)")
	}
	return Pin{URI: loc, AccessKey: p.AccessKey, SecretKey: p.SecretKey}, nil
}

// joinPinPath appends a reference's sub-path to a pin's URI, refusing "..".
func joinPinPath(ref, uri, suffix string) (string, error) {
	if suffix == "" {
		return uri, nil
	}
	if strings.Contains("/"+suffix+"/", "/../") {
		return "", fmt.Errorf("pin reference %q must not contain ..", ref)
	}
	return strings.TrimSuffix(uri, "/") + "/" + suffix, nil
}

// ResolvePinContext is ResolvePin, and also resolves Directory pins:
// "@team/NAME[/sub/path]" becomes the ticket path of NAME (plus sub/path)
// with the ticket's object-store settings. "@team" alone names no Dataset.
func (f *File) ResolvePinContext(ctx context.Context, ref string) (Pin, error) {
	name, suffix, _ := strings.Cut(strings.TrimPrefix(ref, "@"), "/")
	p, ok := f.Pins[name]
	if !strings.HasPrefix(ref, "@") || !ok || !p.IsCatalog() {
		return f.ResolvePin(ref)
	}
	client := &directory.Client{Locator: p.URI, AccessKey: p.AccessKey, SecretKey: objstore.Secret(p.SecretKey)}
	dataset, sub, _ := strings.Cut(suffix, "/")
	if dataset == "" {
		return Pin{}, directoryNeedsName(ctx, name, client)
	}
	if err := directory.ValidName("dataset", dataset); err != nil {
		return Pin{}, fmt.Errorf("@%s/%s: %w", name, dataset, err)
	}
	t, err := tickets.get(ctx, client, dataset)
	if err != nil {
		return Pin{}, fmt.Errorf("@%s/%s: %w", name, dataset, err)
	}
	uri, err := joinPinPath(ref, t.URI, sub)
	if err != nil {
		return Pin{}, err
	}
	s := t.Store()
	return Pin{URI: uri, Endpoint: s.Endpoint, Region: s.Region, PathStyle: s.PathStyle, AccessKey: s.AccessKey, SecretKey: s.SecretKey.Reveal()}, nil
}

// directoryNeedsName explains "@team" without a dataset, listing the
// datasets the user may open when the Directory answers.
func directoryNeedsName(ctx context.Context, name string, c *directory.Client) error {
	msg := fmt.Sprintf("@%s is a Directory (%s), not a Dataset: name one of its datasets as @%s/NAME", name, c.Locator, name)
	ls, err := c.List(ctx)
	if err != nil {
		return fmt.Errorf("%s (listing them failed: %w)", msg, err)
	}
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.Name
	}
	if len(names) == 0 {
		return errors.New(msg + "; none is visible to you")
	}
	return fmt.Errorf("%s; visible to you: %s", msg, strings.Join(names, ", "))
}

// ticketCache keeps the tickets of this process, keyed by Directory, user
// access key and dataset name: one command resolving @team/prod several
// times exchanges once. It is never written anywhere and dies with the
// process; a long-running serve does not use it.
type ticketCache struct {
	mu sync.Mutex
	m  map[ticketKey]directory.Ticket
}

// The secret's digest is part of the key too, so a wrong secret never
// reuses a ticket a right one obtained.
type ticketKey struct {
	locator, accessKey, dataset string
	secret                      [sha256.Size]byte
}

var tickets = &ticketCache{m: map[ticketKey]directory.Ticket{}}

func (c *ticketCache) get(ctx context.Context, client *directory.Client, dataset string) (directory.Ticket, error) {
	key := ticketKey{client.Locator, client.AccessKey, dataset, sha256.Sum256([]byte(client.SecretKey.Reveal()))}
	c.mu.Lock()
	t, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return t, nil
	}
	t, err := client.Ticket(ctx, dataset)
	if err != nil {
		return directory.Ticket{}, err
	}
	c.mu.Lock()
	c.m[key] = t
	c.mu.Unlock()
	return t, nil
}
