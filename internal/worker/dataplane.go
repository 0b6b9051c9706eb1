package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/pchronicle/pchronicle/internal/directory"
	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// DatasetParam is the query parameter that narrows a data-plane request to
// one Dataset; it is required when the caller's s3:// Datasets use more than
// one backend.
const DatasetParam = "dataset"

// CodeAmbiguousBackend is the error code when DatasetParam is needed.
const CodeAmbiguousBackend = "ambiguous_backend"

// CodeBusy is the error code of ErrBusy, the same as plain serve's when its
// query queue is full.
const CodeBusy = "busy"

// AmbiguousBackendError: the caller may open s3:// Datasets on several
// backends (endpoint, region or keys differ) and did not pick one.
type AmbiguousBackendError struct{ Datasets []string }

func (e *AmbiguousBackendError) Error() string {
	return fmt.Sprintf("your datasets use more than one object-store backend; add %s=NAME to the request to pick one of %s",
		DatasetParam, strings.Join(e.Datasets, ", "))
}

// SelectMounts narrows an authorized ticket set to what one worker gets.
// With dataset set, it is that Dataset alone (directory.ErrNotFound if it is
// not among the tickets). Without, it is every ticket, provided their s3://
// Datasets share one backend; otherwise *AmbiguousBackendError. An empty set
// is directory.ErrNotFound: a caller with no Datasets gets 404, never an
// empty server.
func SelectMounts(tickets []directory.Ticket, dataset string) ([]directory.Ticket, error) {
	if dataset != "" {
		for _, t := range tickets {
			if t.Name == dataset {
				return []directory.Ticket{t}, nil
			}
		}
		return nil, directory.ErrNotFound
	}
	if len(tickets) == 0 {
		return nil, directory.ErrNotFound
	}
	var first *directory.Backend
	var s3 []string
	ambiguous := false
	for _, t := range tickets {
		if !t.IsS3() {
			continue // a local path: no backend
		}
		b := t.Backend()
		s3 = append(s3, t.Name)
		if first == nil {
			first = &b
		} else if b != *first {
			ambiguous = true
		}
	}
	if ambiguous {
		return nil, &AmbiguousBackendError{Datasets: s3}
	}
	return tickets, nil
}

// Runner answers a job in a worker (a *Spawner).
type Runner interface {
	Run(ctx context.Context, job Job) (*Result, error)
}

// DataPlane is the parent's handler for the data-plane routes of a serve
// with a Directory: authenticate the caller, narrow their tickets to one
// worker's mounts, hand the raw request to a worker and relay its answer.
// The parent never opens a Dataset itself.
type DataPlane struct {
	ACL       directory.ACLSource
	Runner    Runner
	Options   jsonx.RawMessage        // the serve options every worker gets
	RequestID directory.RequestIDFunc // nil: no request ids
	Log       *slog.Logger            // nil: slog.Default()
}

func (d *DataPlane) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rid := d.RequestID.Of(r)
	log := d.Log
	if log == nil {
		log = slog.Default()
	}
	fail := func(status int, code, msg string) {
		directory.WriteError(w, status, code, msg, rid)
	}
	acl := d.ACL.ACL()
	p, err := acl.Authenticate(r.Header)
	if err != nil {
		log.Info("data-plane request refused", "request_id", rid, "status", http.StatusUnauthorized)
		fail(http.StatusUnauthorized, directory.CodeUnauthorized, err.Error())
		return
	}
	picked := r.URL.Query()[DatasetParam]
	if len(picked) > 1 {
		fail(http.StatusBadRequest, directory.CodeBadRequest, "give "+DatasetParam+"= at most once")
		return
	}
	mounts, err := SelectMounts(acl.Tickets(p), strings.Join(picked, ""))
	var amb *AmbiguousBackendError
	switch {
	case errors.Is(err, directory.ErrNotFound) && p.Anonymous():
		fail(http.StatusUnauthorized, directory.CodeUnauthorized, directory.ErrKeysRequired.Error())
		return
	case errors.Is(err, directory.ErrNotFound):
		msg := "no datasets are visible to you"
		if len(picked) == 1 {
			msg = "dataset " + directory.QuoteName(picked[0]) + " not found"
		}
		log.Info("data-plane request refused", "request_id", rid, "user", p.User, "status", http.StatusNotFound)
		fail(http.StatusNotFound, directory.CodeNotFound, msg)
		return
	case errors.As(err, &amb):
		fail(http.StatusBadRequest, CodeAmbiguousBackend, err.Error())
		return
	}
	req, err := NewRequest(r)
	if errors.Is(err, ErrBodyTooLarge) {
		fail(http.StatusRequestEntityTooLarge, directory.CodeBadRequest, err.Error())
		return
	} else if err != nil {
		fail(http.StatusBadRequest, directory.CodeBadRequest, err.Error())
		return
	}
	res, err := d.Runner.Run(r.Context(), Job{RequestID: rid, Mounts: mounts, Options: d.Options, Request: req})
	if err != nil {
		log.Warn("data-plane request failed", "request_id", rid, "user", p.User, "error", err.Error())
		switch {
		case errors.Is(err, ErrBusy):
			w.Header().Set("Retry-After", "1")
			fail(http.StatusServiceUnavailable, CodeBusy, err.Error())
		case errors.Is(err, ErrUnavailable):
			fail(http.StatusServiceUnavailable, directory.CodeUnavailable, "the query worker did not answer; try again")
		default:
			fail(http.StatusInternalServerError, directory.CodeInternal, "the query worker could not be started")
		}
		return
	}
	if err := res.Respond(w); err != nil {
		log.Warn("data-plane answer cut short", "request_id", rid, "user", p.User, "error", err.Error())
	}
}
