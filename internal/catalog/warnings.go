package catalog

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
)

// What a query skips or leaves out is reported once per query, summarized
// by reason (docs/cli.md, "Files that are skipped"): a folder of thousands
// of files with a few hundred configs beside them gives one line, not a
// line per file.

// Markers ending the source warnings of each reason, which
// SummarizeWarnings groups by.
const (
	notTrajectoryMark = " (not a trajectory: it contributes no rows)"
	skippedMark       = " (unreadable: skipped by --skip-unreadable)"
	liveMark          = "the file is still being written"
)

// NotTrajectoryWarning is the warning of a file no adapter recognizes,
// named by file, as SummarizeWarnings counts it.
func NotTrajectoryWarning(file string, err error) string {
	return file + ": " + err.Error() + notTrajectoryMark
}

// summaryExamples is how many files a summary line names.
const summaryExamples = 3

// SummarizeWarnings turns the warnings of a query's sources (Resolved) into
// a few lines: how many files are not trajectories, how many are still
// being written, how many unreadable ones were skipped — each with a few
// examples — then the other warnings, at most summaryExamples+2 of them and
// a count of the rest.
func SummarizeWarnings(warnings []string) []string {
	var notTraj, live, skipped, other []string
	seen := map[string]bool{}
	for _, w := range warnings {
		if seen[w] {
			continue
		}
		seen[w] = true
		switch {
		case strings.HasSuffix(w, notTrajectoryMark):
			file, _, _ := strings.Cut(w, ": ")
			notTraj = append(notTraj, file)
		case strings.HasSuffix(w, skippedMark):
			skipped = append(skipped, strings.TrimSuffix(w, skippedMark))
		case strings.Contains(w, liveMark):
			file, _, _ := strings.Cut(w, ": ")
			live = append(live, file)
		default:
			other = append(other, w)
		}
	}
	var out []string
	switch n := len(notTraj); {
	case n == 1:
		out = append(out, fmt.Sprintf("1 file is not a trajectory: %s; pchronicle ls --detect says why", notTraj[0]))
	case n > 1:
		out = append(out, fmt.Sprintf("%d files are not trajectories, e.g. %s; pchronicle ls --detect lists them", n, examples(notTraj)))
	}
	if n := len(live); n > 0 {
		out = append(out, fmt.Sprintf("%s still being written, read up to the last complete line: %s", plural(n, "file is", "files are"), examples(live)))
	}
	if n := len(skipped); n > 0 {
		out = append(out, fmt.Sprintf("%s could not be read and skipped (--skip-unreadable): %s", plural(n, "file", "files"), examples(skipped)))
	}
	const maxOther = summaryExamples + 2
	if len(other) > maxOther {
		out = append(out, other[:maxOther]...)
		out = append(out, fmt.Sprintf("… and %d more warnings like these", len(other)-maxOther))
	} else {
		out = append(out, other...)
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// examples joins the first few items and says how many more there are.
func examples(items []string) string {
	if len(items) <= summaryExamples {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:summaryExamples], ", ") + fmt.Sprintf(" and %d more", len(items)-summaryExamples)
}

// Warnings returns every distinct warning of the Snapshot's resolutions so
// far, in Dataset and source order: what a command that ran several
// queries (stats, find, export) reports once at its end.
func (snap *Snapshot) Warnings() []string {
	var out []string
	seen := map[string]bool{}
	add := func(c *cell) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.done || c.res == nil {
			return
		}
		for _, w := range c.res.Warnings {
			if !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
		}
	}
	for _, d := range snap.Datasets {
		for _, s := range d.Sources {
			for i := range s.relations {
				add(&s.relations[i])
			}
			if r := s.rare.Load(); r != nil {
				for i := range r.solo {
					add(&r.solo[i])
				}
			}
			add(&s.events)
		}
	}
	return out
}

// unreadableError is a file an adapter claims but cannot read: it fails the
// query, and says how to leave the file out or skip such files.
type unreadableError struct {
	file string
	err  error
}

func (e *unreadableError) Error() string {
	// The hint comes first: a message is cut at its first '?' where it is
	// shown as a URI might be (RedactURI), and parse errors may hold one.
	return fmt.Sprintf("cannot read %s (leave it out with --exclude '%s', or skip unreadable files with --skip-unreadable): %v", e.file, e.file, e.err)
}

func (e *unreadableError) Unwrap() error { return e.err }

// unreadable wraps a file's failure to parse: a warning under
// --skip-unreadable (a skipped notTrajectory), else an error naming the
// ways out. Other failures (a file that changed, a cancelled query, a
// limit) are returned as they are.
func (s *Source) unreadable(err error) error {
	if _, parse := errors.AsType[*format.ParseError](err); !parse {
		return err
	}
	if s.snap.Options.SkipUnreadable {
		return &notTrajectory{err: fmt.Errorf("%s: %w", s.File, err), skipped: true}
	}
	return &unreadableError{file: s.File, err: err}
}

// SkippedFile is a file source a query found it could not take rows from.
type SkippedFile struct {
	File string `json:"_file_"`
	// Reason is "not a trajectory" (no adapter recognizes it) or
	// "unreadable" (an adapter claims it but cannot parse it, skipped under
	// --skip-unreadable).
	Reason string `json:"reason"`
	// Detail says why, as the warning did.
	Detail string `json:"detail"`
}

// Skipped lists the Dataset's file sources that resolutions so far found
// to be no trajectory or skipped as unreadable, in _file_ order. Detection
// is lazy: a file no query has read yet is not known (pchronicle ls
// --detect detects every file).
func (d *Dataset) Skipped() []SkippedFile {
	var out []SkippedFile
	for _, s := range d.Sources {
		if s.Kind != KindFile {
			continue
		}
		if f, ok := s.skipped(); ok {
			out = append(out, f)
		}
	}
	return out
}

// skipped reports whether one of the source's resolutions found it skipped.
func (s *Source) skipped() (SkippedFile, bool) {
	cells := make([]*cell, 0, 2*len(s.relations))
	for i := range s.relations {
		cells = append(cells, &s.relations[i])
	}
	if r := s.rare.Load(); r != nil {
		for i := range r.solo {
			cells = append(cells, &r.solo[i])
		}
	}
	for _, c := range cells {
		c.mu.Lock()
		res := c.res
		c.mu.Unlock()
		if res == nil || len(res.Files) > 0 {
			continue
		}
		for _, w := range res.Warnings {
			detail := strings.TrimPrefix(w, s.File+": ")
			switch {
			case strings.HasSuffix(w, notTrajectoryMark):
				return SkippedFile{File: s.File, Reason: "not a trajectory", Detail: strings.TrimSuffix(detail, notTrajectoryMark)}, true
			case strings.HasSuffix(w, skippedMark):
				return SkippedFile{File: s.File, Reason: "unreadable", Detail: strings.TrimSuffix(detail, skippedMark)}, true
			}
		}
	}
	return SkippedFile{}, false
}
