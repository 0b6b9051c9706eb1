package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/pchronicle/pchronicle/internal/catalog"
	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/export"
	"github.com/pchronicle/pchronicle/internal/model"
)

// One Storyline by its full identity (dataset, _file_, session_id): the run
// row with its links resolved to coordinates, then steps in pages — a
// header tier and bodies on demand, each body cut to a cap with its true
// size — find-in-Storyline, canonical events and downloads. Nothing here
// loads a whole Storyline except a download.

// storylineKey reads the identity parameters.
func storylineKey(r *http.Request, g Generation) (engine.StorylineKey, error) {
	ds, err := datasetParam(r, g)
	if err != nil {
		return engine.StorylineKey{}, err
	}
	q := r.URL.Query()
	key := engine.StorylineKey{Dataset: ds, File: q.Get("file"), SessionID: q.Get("session_id")}
	if key.File == "" || key.SessionID == "" {
		return key, badRequest("parameters file (the source's _file_) and session_id are required")
	}
	return key, nil
}

// Link points from a Storyline to another one. Key is nil when the target
// is not in the Snapshot (a reference to a file that was not mounted).
type Link struct {
	Key *engine.StorylineKey `json:"key"`
	Ref any                  `json:"ref"`
}

// agentRow is one Storyline of the same run in the same source: the main
// agent and its subagents, with their totals.
type agentRow struct {
	Key              engine.StorylineKey `json:"key"`
	ParentSessionID  *string             `json:"parent_session_id"`
	AgentName        *string             `json:"agent_name"`
	AgentID          *string             `json:"agent_id"`
	Model            *string             `json:"agent_model_name"`
	StepCount        int64               `json:"step_count"`
	ToolCallCount    int64               `json:"tool_call_count"`
	PromptTokens     *int64              `json:"prompt_tokens"`
	CompletionTokens *int64              `json:"completion_tokens"`
	CostUSD          *float64            `json:"cost_usd"`
	Status           string              `json:"status"`
}

func (s *Server) storyline(w http.ResponseWriter, r *http.Request, g Generation) error {
	key, err := storylineKey(r, g)
	if err != nil {
		return err
	}
	run, err := g.StorylineReader().Run(r.Context(), key)
	if err != nil {
		return err
	}
	links := map[string]any{"parent": nil, "continuation": nil, "subagents": []Link{}}
	if run.ParentSessionID != nil {
		links["parent"] = &engine.StorylineKey{Dataset: key.Dataset, File: key.File, SessionID: *run.ParentSessionID}
	}
	if run.ContinuedTrajectoryRef != nil {
		links["continuation"] = s.fileLink(r, g, key, *run.ContinuedTrajectoryRef, "", *run.ContinuedTrajectoryRef)
	}
	if run.SubagentRefs != nil {
		var refs []model.SubagentRef
		if json.Unmarshal([]byte(*run.SubagentRefs), &refs) == nil {
			subs := make([]Link, 0, len(refs))
			for _, ref := range refs {
				switch {
				case ref.Embedded && ref.ChildSessionID != "":
					subs = append(subs, Link{Key: &engine.StorylineKey{Dataset: key.Dataset, File: key.File, SessionID: ref.ChildSessionID}, Ref: ref})
				case ref.TrajectoryPath != "":
					subs = append(subs, s.fileLink(r, g, key, ref.TrajectoryPath, ref.SessionID, ref))
				default:
					subs = append(subs, Link{Ref: ref})
				}
			}
			links["subagents"] = subs
		}
	}
	agents, err := s.runGroup(r, g, key, run)
	if err != nil {
		return err
	}
	agents = s.crossFileLinks(r, g, key, run, agents, links)
	m := runObject(model.ColumnNames(model.RelRuns), model.Values(run))
	body := map[string]any{"snapshot_id": g.ID(), "key": key, "run": m, "links": links, "agents": agents, "coordinates": nil}
	// Where a canonical Storyline physically lives, for the writers that
	// append to it (they write the store directly, never through this API).
	if uri, err := g.Snapshot().CanonicalEventURI(key.Dataset, key.File, key.SessionID); err == nil {
		body["coordinates"] = map[string]string{"canonical_event_uri": uri}
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

// maxCrossFileChildren bounds the subagents in other files a Storyline
// lists.
const maxCrossFileChildren = 100

// crossFileLinks resolves parent/child links between sources, as Claude
// Code writes them (a subagent in <session>/subagents/agent-*.jsonl names
// its parent's session): a parent that is not in the Storyline's own
// source is the one run of the Dataset with that session_id, and the runs
// of other sources that name this Storyline as their parent are its
// subagents, listed among its links and its agents. The links are best
// effort: a failed lookup leaves them as they were.
func (s *Server) crossFileLinks(r *http.Request, g Generation, key engine.StorylineKey, run *model.Run, agents []agentRow, links map[string]any) []agentRow {
	d, err := lookupDataset(g.Snapshot(), key.Dataset)
	if err != nil {
		return agents
	}
	rel := engine.Ident(d.Mount.Alias) + ".runs"
	if run.ParentSessionID != nil && !slices.ContainsFunc(agents, func(a agentRow) bool { return a.Key.SessionID == *run.ParentSessionID }) {
		parents, _ := s.agentRows(r, g, key.Dataset, fmt.Sprintf("SELECT %s FROM %s WHERE session_id = %s AND _file_ <> %s LIMIT 2",
			agentColumns, rel, engine.Literal(*run.ParentSessionID), engine.Literal(key.File)))
		if len(parents) == 1 {
			links["parent"] = &parents[0].Key
		}
	}
	children, _ := s.agentRows(r, g, key.Dataset, fmt.Sprintf("SELECT %s FROM %s WHERE parent_session_id = %s AND _file_ <> %s ORDER BY _file_, session_id LIMIT %d",
		agentColumns, rel, engine.Literal(key.SessionID), engine.Literal(key.File), maxCrossFileChildren))
	if len(children) == 0 {
		return agents
	}
	subs, _ := links["subagents"].([]Link)
	for i := range children {
		c := children[i].Key
		subs = append(subs, Link{Key: &c, Ref: map[string]string{"trajectory_path": c.File, "session_id": c.SessionID}})
	}
	links["subagents"] = subs
	return append(agents, children...)
}

// fileLink resolves a reference to another file (a continuation, a
// subagent document) relative to the source's own path. The target's
// session is the one the reference names, else the file's only top-level
// Storyline.
func (s *Server) fileLink(r *http.Request, g Generation, from engine.StorylineKey, ref, session string, raw any) Link {
	target := path.Clean(path.Join(path.Dir(from.File), ref))
	if strings.HasPrefix(target, "../") || target == ".." {
		return Link{Ref: raw}
	}
	if _, err := g.Snapshot().LookupSource(from.Dataset, target); err != nil {
		return Link{Ref: raw}
	}
	if session == "" {
		d, err := lookupDataset(g.Snapshot(), from.Dataset)
		if err != nil {
			return Link{Ref: raw}
		}
		sql := fmt.Sprintf("SELECT session_id FROM %s.runs WHERE _file_ = %s AND parent_session_id IS NULL ORDER BY session_id LIMIT 2",
			engine.Ident(d.Mount.Alias), engine.Literal(target))
		res, err := g.Stream(r.Context(), sql, engine.QueryOptions{MaxRows: -1, Timeout: s.cfg.MaxTimeout})
		if err != nil {
			return Link{Ref: raw}
		}
		var ids []string
		for res.Next() {
			if id, ok := res.Values()[0].(string); ok {
				ids = append(ids, id)
			}
		}
		res.Close()
		if len(ids) != 1 {
			return Link{Ref: raw}
		}
		session = ids[0]
	}
	return Link{Key: &engine.StorylineKey{Dataset: from.Dataset, File: target, SessionID: session}, Ref: raw}
}

// maxFamily bounds the runs of one source read to find a Storyline's
// agents.
const maxFamily = 10000

// runGroup lists the agents of the run in the same source: the Storyline's
// root (followed up its parent links) and every Storyline below it, root
// first. It follows parent/child links, not run_id: the samples of an
// evaluation share a run_id and are not each other's agents.
func (s *Server) runGroup(r *http.Request, g Generation, key engine.StorylineKey, run *model.Run) ([]agentRow, error) {
	d, err := lookupDataset(g.Snapshot(), key.Dataset)
	if err != nil {
		return nil, err
	}
	src, err := g.Snapshot().LookupSource(key.Dataset, key.File)
	if err != nil {
		return nil, err
	}
	self := agentRow{Key: key, ParentSessionID: run.ParentSessionID, AgentName: run.AgentName, AgentID: run.AgentID, Model: run.AgentModelName,
		StepCount: run.StepCount, ToolCallCount: run.ToolCallCount, PromptTokens: run.PromptTokens, CompletionTokens: run.CompletionTokens,
		CostUSD: run.CostUSD, Status: run.Status}
	if src.Kind == catalog.KindEvents { // a live trace may be ahead of the pinned runs
		return []agentRow{self}, nil
	}
	all, err := s.agentRows(r, g, key.Dataset, fmt.Sprintf("SELECT %s FROM %s.runs WHERE _file_ = %s ORDER BY session_id LIMIT %d",
		agentColumns, engine.Ident(d.Mount.Alias), engine.Literal(key.File), maxFamily))
	if err != nil {
		return nil, err
	}
	return family(all, self), nil
}

// agentColumns are the columns of the runs relation an agentRow holds.
const agentColumns = `_file_, session_id, parent_session_id, agent_name, agent_id, agent_model_name, step_count, tool_call_count,
  prompt_tokens, completion_tokens, cost_usd, status`

// agentRows runs sql, which selects agentColumns, and returns its rows.
func (s *Server) agentRows(r *http.Request, g Generation, dataset, sql string) ([]agentRow, error) {
	rows, err := g.Stream(r.Context(), sql, engine.QueryOptions{MaxRows: -1, Timeout: s.cfg.MaxTimeout})
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []agentRow
	for rows.Next() {
		v := rows.Values()
		out = append(out, agentRow{Key: engine.StorylineKey{Dataset: dataset, File: v[0].(string), SessionID: v[1].(string)},
			ParentSessionID: strPtr(v[2]), AgentName: strPtr(v[3]), AgentID: strPtr(v[4]), Model: strPtr(v[5]),
			StepCount: v[6].(int64), ToolCallCount: v[7].(int64), PromptTokens: intPtr(v[8]), CompletionTokens: intPtr(v[9]),
			CostUSD: floatPtr(v[10]), Status: v[11].(string)})
	}
	return out, rows.Err()
}

// family picks from the runs of one source the tree self belongs to: up
// its parent links to the root, then every descendant, breadth first. A
// parent outside the source (or a cycle) ends the walk up.
func family(all []agentRow, self agentRow) []agentRow {
	byID := make(map[string]int, len(all))
	children := map[string][]int{}
	for i, a := range all {
		byID[a.Key.SessionID] = i
		if a.ParentSessionID != nil {
			children[*a.ParentSessionID] = append(children[*a.ParentSessionID], i)
		}
	}
	root, seen := self, map[string]bool{self.Key.SessionID: true}
	for root.ParentSessionID != nil {
		i, ok := byID[*root.ParentSessionID]
		if !ok || seen[all[i].Key.SessionID] {
			break
		}
		seen[all[i].Key.SessionID] = true
		root = all[i]
	}
	if i, ok := byID[root.Key.SessionID]; ok {
		root = all[i]
	}
	out := []agentRow{root}
	visited := map[string]bool{root.Key.SessionID: true}
	for k := 0; k < len(out); k++ {
		for _, i := range children[out[k].Key.SessionID] { // all is sorted by session_id
			if id := all[i].Key.SessionID; !visited[id] {
				visited[id] = true
				out = append(out, all[i])
			}
		}
	}
	return out
}

func strPtr(v any) *string {
	if s, ok := v.(string); ok {
		return &s
	}
	return nil
}

func intPtr(v any) *int64 {
	if n, ok := v.(int64); ok {
		return &n
	}
	return nil
}

func floatPtr(v any) *float64 {
	if f, ok := v.(float64); ok {
		return &f
	}
	return nil
}

// Page bounds.
const (
	defaultStepPage = 100
	maxStepPage     = 1000
	defaultBodyPage = 20
	maxBodyPage     = 200
	defaultMaxChars = 4000
)

// pageParams reads a page's from (0 = the start) and limit.
func pageParams(r *http.Request, defaultLimit, maxLimit int64) (from, limit int64, err error) {
	if from, err = intParam(r, "from", 0, 0, 1<<62); err != nil {
		return 0, 0, err
	}
	limit, err = intParam(r, "limit", defaultLimit, 1, maxLimit)
	return from, limit, err
}

func (s *Server) storylineSteps(w http.ResponseWriter, r *http.Request, g Generation) error {
	key, err := storylineKey(r, g)
	if err != nil {
		return err
	}
	from, limit, err := pageParams(r, defaultStepPage, maxStepPage)
	if err != nil {
		return err
	}
	steps, err := g.StorylineReader().StepHeaders(r.Context(), key, from, limit+1)
	if err != nil {
		return err
	}
	var next any
	if int64(len(steps)) > limit {
		steps = steps[:limit]
		next = steps[len(steps)-1].StepIndex + 1
	}
	writeJSON(w, http.StatusOK, map[string]any{"snapshot_id": g.ID(), "key": key, "steps": orEmpty(steps), "next_from": next})
	return nil
}

func (s *Server) storylineBodies(w http.ResponseWriter, r *http.Request, g Generation) error {
	key, err := storylineKey(r, g)
	if err != nil {
		return err
	}
	from, limit, err := pageParams(r, defaultBodyPage, maxBodyPage)
	if err != nil {
		return err
	}
	maxChars, err := intParam(r, "max_chars", defaultMaxChars, 0, 1<<31)
	if err != nil {
		return err
	}
	steps, err := g.StorylineReader().StepBodies(r.Context(), key, from, limit, int(maxChars))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"snapshot_id": g.ID(), "key": key, "steps": orEmpty(steps), "max_chars": maxChars})
	return nil
}

func (s *Server) storylineFind(w http.ResponseWriter, r *http.Request, g Generation) error {
	key, err := storylineKey(r, g)
	if err != nil {
		return err
	}
	text := r.URL.Query().Get("q")
	if text == "" {
		return badRequest("parameter q (the text to find) is required")
	}
	from, limit, err := pageParams(r, 100, maxStepPage)
	if err != nil {
		return err
	}
	hits, err := g.StorylineReader().FindSteps(r.Context(), key, text, from, limit+1)
	if err != nil {
		return err
	}
	var next any
	if int64(len(hits)) > limit {
		hits = hits[:limit]
		next = hits[len(hits)-1] + 1
	}
	writeJSON(w, http.StatusOK, map[string]any{"snapshot_id": g.ID(), "key": key, "q": text, "steps": hits, "next_from": next})
	return nil
}

func (s *Server) storylineEvents(w http.ResponseWriter, r *http.Request, g Generation) error {
	key, err := storylineKey(r, g)
	if err != nil {
		return err
	}
	from, limit, err := pageParams(r, 500, 5000)
	if err != nil {
		return err
	}
	evs, err := g.StorylineReader().Events(r.Context(), key)
	if err != nil {
		return err
	}
	page, _, next := slicePage(evs, from, limit)
	out := make([]map[string]any, len(page))
	for i := range page {
		m := runObject(model.ColumnNames(model.RelEvents), model.Values(&page[i]))
		if json.Valid([]byte(page[i].Payload)) {
			m["payload"] = json.RawMessage(page[i].Payload)
		}
		out[i] = m
	}
	writeJSON(w, http.StatusOK, map[string]any{"snapshot_id": g.ID(), "key": key, "events": out, "total": len(evs), "next_from": next})
	return nil
}

// storylineExport downloads one Storyline as ATIF, OpenAI messages or
// canonical events.
func (s *Server) storylineExport(w http.ResponseWriter, r *http.Request, g Generation) error {
	key, err := storylineKey(r, g)
	if err != nil {
		return err
	}
	as := r.URL.Query().Get("as")
	var body []byte
	var ext, ctype string
	sl, err := g.StorylineReader().Load(r.Context(), key)
	if err != nil {
		return err
	}
	switch as {
	case export.ATIF:
		body, err = export.ATIFDocument(sl)
		ext, ctype = ".atif.json", "application/json"
	case export.OpenAI, export.Canonical:
		var b bytes.Buffer
		ew, _ := export.New(as, &b, "")
		if err = ew.Write(key.Dataset, sl); err == nil {
			err = ew.Close()
		}
		body = b.Bytes()
		ext, ctype = "."+as+".jsonl", "application/x-ndjson"
	default:
		return badRequest("parameter as=%q: want %s", as, strings.Join(export.Formats, ", "))
	}
	if err != nil {
		return err
	}
	name := safeFileName(key.SessionID) + ext
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	w.Write(body)
	if len(body) > 0 && body[len(body)-1] != '\n' {
		w.Write([]byte("\n"))
	}
	return nil
}
