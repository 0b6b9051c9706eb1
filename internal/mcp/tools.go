package mcp

import (
	"context"
	"net/url"
	"strconv"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools' inputs. Descriptions are what a model reads to use a tool
// right.

type listDatasetsIn struct{}

type describeIn struct {
	Relation string `json:"relation,omitempty" jsonschema:"one of sources, runs, steps, tool_calls, events, projections; empty for all six"`
}

type queryIn struct {
	SQL       string `json:"sql" jsonschema:"one read-only DuckDB SELECT over the relations (runs, steps, tool_calls, events, sources, projections); with several Datasets qualify them: name.runs"`
	MaxRows   int    `json:"max_rows,omitempty" jsonschema:"rows to return, default 100, at most 1000; more rows are cut and truncated is true"`
	TimeoutMS int    `json:"timeout_ms,omitempty" jsonschema:"time limit in milliseconds (the server's limit is the most)"`
}

type findIn struct {
	Dataset   string `json:"dataset,omitempty" jsonschema:"only this Dataset (default: all)"`
	SessionID string `json:"session_id,omitempty" jsonschema:"the Storyline's session_id"`
	RunID     string `json:"run_id,omitempty" jsonschema:"the run_id (shared by a run's main agent and its subagents)"`
	Agent     string `json:"agent,omitempty" jsonschema:"agent_name, exactly"`
	Text      string `json:"text,omitempty" jsonschema:"text in messages, reasoning, observations, tool arguments or results (case-insensitive); the answer lists the steps that match"`
	Limit     int    `json:"limit,omitempty" jsonschema:"how many, default 20, at most 100"`
	Cursor    string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous answer"`
}

type readIn struct {
	Dataset   string `json:"dataset,omitempty" jsonschema:"the Storyline's dataset (needed when several are mounted)"`
	File      string `json:"file" jsonschema:"the Storyline's _file_"`
	SessionID string `json:"session_id" jsonschema:"the Storyline's session_id"`
	From      int    `json:"from,omitempty" jsonschema:"first step_index of the page (next_from of the previous page); 0 also returns the run's summary"`
	Limit     int    `json:"limit,omitempty" jsonschema:"steps in the page, default 10, at most 50"`
	MaxChars  int    `json:"max_chars,omitempty" jsonschema:"characters of each message, reasoning, observation, argument or result before it is cut to a preview (its true size in bytes is given), default 2000"`
}

type compareIn struct {
	ADataset   string `json:"a_dataset,omitempty" jsonschema:"dataset of run A (needed when several are mounted)"`
	AFile      string `json:"a_file" jsonschema:"_file_ of run A"`
	ASessionID string `json:"a_session_id" jsonschema:"session_id of run A"`
	BDataset   string `json:"b_dataset,omitempty" jsonschema:"dataset of run B"`
	BFile      string `json:"b_file" jsonschema:"_file_ of run B"`
	BSessionID string `json:"b_session_id" jsonschema:"session_id of run B"`
	From       int    `json:"from,omitempty" jsonschema:"first aligned row (next_from of the previous answer)"`
	Limit      int    `json:"limit,omitempty" jsonschema:"aligned rows, default 50, at most 200"`
}

type answerMap = map[string]any

func (s *Server) tools() {
	sdk.AddTool(s.srv, &sdk.Tool{Name: "list_datasets", Description: "List the mounted Datasets: name, location, how many sources and of which formats, and the snapshot being read."},
		func(ctx context.Context, req *sdk.CallToolRequest, _ listDatasetsIn) (*sdk.CallToolResult, answerMap, error) {
			out, err := s.call(ctx, req, "GET", "/api/catalog", nil, nil)
			if err != nil {
				return nil, nil, err
			}
			return nil, answerMap{"snapshot_id": out["snapshot_id"], "datasets": out["datasets"]}, nil
		})
	sdk.AddTool(s.srv, &sdk.Tool{Name: "describe_relations", Description: "The six relations every Dataset holds (runs: one row per Storyline; steps; tool_calls; events; sources; projections) with each column's type and meaning. A join of two of them from one Dataset must include _file_ equality."},
		func(ctx context.Context, req *sdk.CallToolRequest, in describeIn) (*sdk.CallToolResult, answerMap, error) {
			out, err := s.call(ctx, req, "GET", "/api/schema", nil, nil)
			if err != nil {
				return nil, nil, err
			}
			rels, _ := out["relations"].([]any)
			if in.Relation == "" {
				return nil, answerMap{"relations": rels}, nil
			}
			for _, r := range rels {
				if rel, _ := r.(map[string]any); rel["name"] == in.Relation {
					return nil, answerMap{"relations": []any{rel}}, nil
				}
			}
			return nil, nil, &ToolError{Code: "bad_request", Message: "no relation " + strconv.Quote(in.Relation), Hint: "one of sources, runs, steps, tool_calls, events, projections"}
		})
	sdk.AddTool(s.srv, &sdk.Tool{Name: "query", Description: "Run one read-only DuckDB SQL statement over the Datasets' relations, sandboxed and time-limited. Returns columns with their DuckDB types, rows (long values cut to previews), and truncated when the row cap cut the result.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest, in queryIn) (*sdk.CallToolResult, answerMap, error) {
			body := map[string]any{"sql": in.SQL, "max_rows": bounded(in.MaxRows, defaultQueryRows, maxQueryRows)}
			if in.TimeoutMS > 0 {
				body["timeout_ms"] = in.TimeoutMS
			}
			out, err := s.call(ctx, req, "POST", "/api/query", nil, body)
			if err != nil {
				return nil, nil, err
			}
			cut := 0
			res := answerMap{"columns": out["columns"], "rows": clip(out["rows"], defaultMaxChars, &cut), "row_count": out["row_count"],
				"truncated": out["truncated"], "snapshot_id": out["snapshot_id"], "warnings": out["warnings"]}
			if cut > 0 {
				res["values_cut"] = cut
			}
			return nil, res, nil
		})
	sdk.AddTool(s.srv, &sdk.Tool{Name: "find_storylines", Description: "Find Storylines (runs) by session_id, run_id or agent, newest first; or, with text, the steps whose content contains it. Each result names its dataset, _file_ and session_id, which read_storyline and compare_runs take."},
		func(ctx context.Context, req *sdk.CallToolRequest, in findIn) (*sdk.CallToolResult, answerMap, error) {
			p := url.Values{}
			setIf(p, "dataset", in.Dataset)
			setIf(p, "cursor", in.Cursor)
			p.Set("limit", strconv.Itoa(bounded(in.Limit, 20, 100)))
			if in.Text != "" {
				if in.SessionID != "" || in.RunID != "" || in.Agent != "" {
					return nil, nil, &ToolError{Code: "bad_request", Message: "text cannot be combined with session_id, run_id or agent", Hint: "search by text, or filter runs, in separate calls"}
				}
				p.Set("q", in.Text)
				out, err := s.call(ctx, req, "GET", "/api/search", p, nil)
				if err != nil {
					return nil, nil, err
				}
				cut := 0
				return nil, answerMap{"steps": clip(out["hits"], 300, &cut), "next_cursor": out["next_cursor"], "snapshot_id": out["snapshot_id"]}, nil
			}
			setIf(p, "session_id", in.SessionID)
			setIf(p, "run_id", in.RunID)
			setIf(p, "agent", in.Agent)
			out, err := s.call(ctx, req, "GET", "/api/runs", p, nil)
			if err != nil {
				return nil, nil, err
			}
			var runs []any
			list, _ := out["runs"].([]any)
			for _, r := range list {
				m, _ := r.(map[string]any)
				run := map[string]any{}
				for _, k := range []string{"dataset", "_file_", "session_id", "run_id", "agent_name", "agent_model_name", "source_format",
					"status", "started_at", "duration_ms", "step_count", "tool_call_count", "prompt_tokens", "completion_tokens", "cost_usd", "reward"} {
					run[k] = m[k]
				}
				runs = append(runs, run)
			}
			return nil, answerMap{"storylines": orEmpty(runs), "total": out["total"], "next_cursor": out["next_cursor"], "snapshot_id": out["snapshot_id"]}, nil
		})
	sdk.AddTool(s.srv, &sdk.Tool{Name: "read_storyline", Description: "Read one Storyline page by page: each step's source, message, reasoning and observation, the tool calls it made with their arguments and results. Long values come as previews with their true size; next_from is the next page's from (null at the end)."},
		func(ctx context.Context, req *sdk.CallToolRequest, in readIn) (*sdk.CallToolResult, answerMap, error) {
			p := url.Values{}
			setIf(p, "dataset", in.Dataset)
			p.Set("file", in.File)
			p.Set("session_id", in.SessionID)
			res := answerMap{}
			if in.From <= 0 {
				head, err := s.call(ctx, req, "GET", "/api/storyline", p, nil)
				if err != nil {
					return nil, nil, err
				}
				res["run"], res["links"], res["agents"] = head["run"], head["links"], head["agents"]
			}
			limit := bounded(in.Limit, defaultPageSteps, maxPageSteps)
			p.Set("from", strconv.Itoa(max(in.From, 0)))
			p.Set("limit", strconv.Itoa(limit))
			p.Set("max_chars", strconv.Itoa(bounded(in.MaxChars, defaultMaxChars, 20000)))
			out, err := s.call(ctx, req, "GET", "/api/storyline/bodies", p, nil)
			if err != nil {
				return nil, nil, err
			}
			steps, _ := out["steps"].([]any)
			res["key"], res["steps"], res["snapshot_id"] = out["key"], orEmpty(steps), out["snapshot_id"]
			res["next_from"] = nil
			if len(steps) == limit {
				res["next_from"] = max(in.From, 0) + limit
			}
			return nil, res, nil
		})
	sdk.AddTool(s.srv, &sdk.Tool{Name: "compare_runs", Description: "Compare two runs step by step: their figures (steps, tool calls and errors, tokens, cost, duration, status, reward) with the difference B − A, and the steps aligned as same, changed (with what differs), A only or B only, and the first divergence."},
		func(ctx context.Context, req *sdk.CallToolRequest, in compareIn) (*sdk.CallToolResult, answerMap, error) {
			p := url.Values{}
			setIf(p, "a_dataset", in.ADataset)
			setIf(p, "b_dataset", in.BDataset)
			p.Set("a_file", in.AFile)
			p.Set("a_session_id", in.ASessionID)
			p.Set("b_file", in.BFile)
			p.Set("b_session_id", in.BSessionID)
			p.Set("from", strconv.Itoa(max(in.From, 0)))
			p.Set("limit", strconv.Itoa(bounded(in.Limit, 50, 200)))
			out, err := s.call(ctx, req, "GET", "/api/compare", p, nil)
			if err != nil {
				return nil, nil, err
			}
			cut := 0
			return nil, clip(out, defaultMaxChars, &cut).(map[string]any), nil
		})
}

func orEmpty(v []any) []any {
	if v == nil {
		return []any{}
	}
	return v
}
