package catalog

import (
	"context"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/format/harbor"
)

// Harbor trial directories. A Harbor job writes one directory per trial:
//
//	T/config.json      the trial's configuration
//	T/result.json      how the trial ended (Harbor's TrialResult: reward, exception, totals)
//	T/agent/trajectory.json (+ continuations and subagent trajectory.*.json)
//	T/verifier/…       the verifier's output (reward.txt or reward.json, logs)
//
// A directory is recognized as a trial from names alone — discovery reads
// no file: it holds config.json and result.json, and agent/trajectory.json
// is a candidate below it. Then result.json is a companion of that
// trajectory, not a source: its pin is part of the trajectory's, and when
// the trajectory is normalized its main Storylines take the reward and
// scores it records (format/harbor). config.json and the candidate files
// under verifier/ are not trajectories either and are left out, so a
// folder of trials does not warn about them. Continuations and subagent
// documents are sources as ever, without the outcome (summing rewards over
// a trial's files would count it twice). A job-level result.json has no
// agent/trajectory.json beside it and stays a source (a warning, when a
// query reads it: not a trajectory).

const (
	trialResult     = "result.json"
	trialConfig     = "config.json"
	trialTrajectory = "agent/trajectory.json"
	trialVerifier   = "verifier/"
)

// pairTrials attaches each trial's result.json to its trajectory and drops
// the trial's companion files from the sources, keeping their order.
func pairTrials(found []*DiscoveredSource) []*DiscoveredSource {
	byFile := make(map[string]*DiscoveredSource, len(found))
	for _, s := range found {
		if s.Kind == KindFile {
			byFile[s.File] = s
		}
	}
	drop := map[*DiscoveredSource]bool{}
	var trials []string // trial directories, "" for the root
	for _, s := range found {
		if s.Kind != KindFile || (s.File != trialTrajectory && !strings.HasSuffix(s.File, "/"+trialTrajectory)) {
			continue
		}
		dir := strings.TrimSuffix(strings.TrimSuffix(s.File, trialTrajectory), "/")
		result, config := byFile[path.Join(dir, trialResult)], byFile[path.Join(dir, trialConfig)]
		if result == nil || config == nil || result.Err != nil {
			continue
		}
		s.Companion = result
		drop[result], drop[config] = true, true
		trials = append(trials, dir)
	}
	if len(drop) == 0 {
		return found
	}
	for _, dir := range trials {
		prefix := trialVerifier
		if dir != "" {
			prefix = dir + "/" + trialVerifier
		}
		for file, s := range byFile {
			if strings.HasPrefix(file, prefix) {
				drop[s] = true
			}
		}
	}
	kept := found[:0]
	for _, s := range found {
		if !drop[s] {
			kept = append(kept, s)
		}
	}
	return kept
}

// outcome is the ingest hook (ingest.Options.Outcome) that reads the
// source's companion result.json at its pinned version: a local file is
// re-checked against its pin on the open file, a remote object downloaded
// at its pinned version.
func (s *Source) outcome() func(context.Context) (*format.Outcome, error) {
	c := s.Companion
	if c == nil {
		return nil
	}
	src := format.Source{Path: c.Path, File: c.File}
	return func(ctx context.Context) (*format.Outcome, error) {
		local := c.Path
		var check func(os.FileInfo) error
		switch rev := c.Revision.(type) {
		case *FileRevision:
			check = func(fi os.FileInfo) error { return rev.Check(c.File, fi) }
		case RemoteFileRevision:
			var err error
			if local, err = rev.remote.fetch(ctx, s.snap, rev.Object, "companion/"+path.Base(rev.Object.Key)); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("%s: cannot read a %s companion", c.File, c.Revision.RevisionKind())
		}
		f, err := os.Open(local)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if check != nil {
			fi, err := f.Stat()
			if err != nil {
				return nil, err
			}
			if err := check(fi); err != nil {
				return nil, err
			}
		}
		return harbor.ReadTrialResult(f, src)
	}
}
