// Package store holds what the writers of every store kind share. The
// stores themselves live in its subpackages: storyline, events,
// projection, compact, and remote for object-store destinations.
package store

import "errors"

// ErrLostRace is matched (errors.Is) by the error of a publication that
// lost to another writer: the state it was built on was replaced after it
// read it, so it published nothing and can be retried. docs/storage.md
// (writer concurrency) says which writers can get it.
var ErrLostRace = errors.New("another writer published first")
