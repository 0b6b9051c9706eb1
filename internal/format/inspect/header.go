package inspect

import (
	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Log statuses (EvalLog.status) that decide a sample's status; the others
// are "started" and "success".
const (
	logCancelled = "cancelled"
	logError     = "error"
)

// headerParts are the raw log members a Storyline needs from the header:
// the eval spec, the plan, the log status, version and error. The JSON
// form holds them beside samples; an .eval zip in header.json (or, for a
// log still being written, _journal/start.json).
type headerParts struct {
	eval, plan, status, version, err jsonx.RawMessage
	seen                             map[string]bool
}

func (p *headerParts) set(key string, raw jsonx.RawMessage) {
	if p.seen == nil {
		p.seen = map[string]bool{}
	}
	p.seen[key] = true
	switch key {
	case "eval":
		p.eval = raw
	case "plan":
		p.plan = raw
	case "status":
		p.status = raw
	case "version":
		p.version = raw
	case "error":
		p.err = raw
	}
}

// headerKeys are the top-level members headerParts keeps.
var headerKeys = map[string]bool{"eval": true, "plan": true, "status": true, "version": true, "error": true}

// complete reports whether the members samples depend on have been read
// (so samples can be read as they come).
func (p *headerParts) complete() bool {
	return p.seen["eval"] && p.seen["plan"] && p.seen["status"]
}

// header is what every Storyline of a log takes from its header, computed
// once per file.
type header struct {
	found  bool   // the log has an eval spec
	runID  string // eval.run_id, else eval.eval_id
	model  string // eval.model
	agent  string // eval.solver, else the plan's last solver
	status string // the log status ("" when the log does not say)
	// evalExtra and logExtra go to runs.extra.eval and runs.extra.log.
	evalExtra, logExtra jsonx.RawMessage
}

// evalColumns are the eval spec members that columns hold.
var evalColumns = []string{"run_id", "model", "solver"}

func newHeader(p headerParts) header {
	var h header
	if ev := format.SplitObject(p.eval); ev != nil {
		h.found = true
		h.runID = format.String(ev["run_id"])
		if h.runID == "" {
			h.runID = format.String(ev["eval_id"])
		}
		h.model = format.String(ev["model"])
		h.agent = format.String(ev["solver"])
		// sample_ids lists every sample of the dataset: repeating it on
		// each Storyline would grow quadratically with the log.
		if ds := format.SplitObject(ev["dataset"]); ds != nil {
			if _, ok := ds["sample_ids"]; ok {
				ev["dataset"] = rawExtra(ds, "sample_ids")
			}
		}
		h.evalExtra = rawExtra(ev, evalColumns...)
	}
	log := map[string]jsonx.RawMessage{}
	var solvers []string
	if plan := format.SplitObject(p.plan); plan != nil {
		steps, _ := format.SplitArray(plan["steps"])
		for _, st := range steps {
			if name := format.String(format.SplitObject(st)["solver"]); name != "" {
				solvers = append(solvers, name)
			}
		}
		if len(solvers) > 0 {
			log["plan"] = mustJSON(solvers)
		}
	}
	if h.agent == "" && len(solvers) > 0 {
		h.agent = solvers[len(solvers)-1] // the agent loop comes last in a plan
	}
	h.status = format.String(p.status)
	for key, raw := range map[string]jsonx.RawMessage{"status": p.status, "version": p.version} {
		if !format.IsNull(raw) {
			log[key] = raw
		}
	}
	if e := format.SplitObject(p.err); e != nil {
		log["error"] = rawExtra(e, "traceback_ansi")
	}
	if len(log) > 0 {
		h.logExtra = rawExtra(log)
	}
	return h
}

// rawExtra is validExtra as a raw JSON value ({} when nothing is left).
func rawExtra(obj map[string]jsonx.RawMessage, drop ...string) jsonx.RawMessage {
	if e := validExtra(obj, drop...); e != nil {
		return jsonx.RawMessage(*e)
	}
	return jsonx.RawMessage("{}")
}

// validExtra is format.Extra of an object whose values are valid JSON
// (every value read from a log was validated with it, and the others are
// written here), without validating them again: that was most of the
// cost of writing the extras.
func validExtra(obj map[string]jsonx.RawMessage, known ...string) *string {
	var buf [16]string
	names := buf[:0]
	for name := range obj {
		names = append(names, name)
	}
	return format.ExtraNamed(obj, names, known)
}

func mustJSON(v any) jsonx.RawMessage {
	raw, _ := jsonx.Marshal(v)
	return raw
}

// runStatus decides a sample's status: its own error or limit first; a
// sample without them finished unless the log was cancelled or failed
// before the sample was scored.
func runStatus(logStatus string, hasError, hasLimit, scored bool) string {
	switch {
	case hasError:
		return model.StatusError
	case hasLimit:
		return model.StatusTruncated
	case !scored && logStatus == logCancelled:
		return model.StatusCancelled
	case !scored && logStatus == logError:
		return model.StatusError
	}
	return model.StatusCompleted
}
