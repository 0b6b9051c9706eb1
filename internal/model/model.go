// Package model defines the normalized data model shared by every format
// adapter, store and the query engine: the Storyline relations (runs, steps,
// tool_calls) and canonical events. The Go structs are the single source of
// truth for column names and types; schema.go derives the SQL schemas from the
// same definitions, and docs/query-model.md documents every column.
//
// Nullable columns are pointers. JSON-valued columns (extra, payload,
// arguments) hold JSON text, never decoded values, so that rows round-trip
// losslessly through Parquet and DuckDB.
package model

import "time"

// SchemaVersion is the version of the Storyline/events row schemas written by
// this build. Stores record it in their manifests; readers accept every
// version from MinSchemaVersion on and read a column added later (its
// `since` tag, see Column.Since) as NULL, and reject versions they do not
// know.
const (
	SchemaVersion    = 3
	MinSchemaVersion = 1
)

// Step sources.
const (
	SourceSystem = "system"
	SourceUser   = "user"
	SourceAgent  = "agent"
	SourceTool   = "tool"
)

// Run statuses. Formats that carry no status give StatusUnknown.
const (
	StatusCompleted = "completed"
	StatusError     = "error"
	StatusTruncated = "truncated"
	StatusCancelled = "cancelled"
	StatusUnknown   = "unknown"
)

// Tool-call result statuses.
const (
	ResultOK      = "ok"
	ResultError   = "error"
	ResultMissing = "missing"
)

// Tool-call result link kinds: how a result was matched to its call.
const (
	LinkByID      = "id"        // the result named the call's id
	LinkByName    = "name"      // no id links them: the earliest unanswered call of the result's function name
	LinkByOrder   = "order"     // no ids at all: the earliest unanswered call
	LinkInline    = "inline"    // the call's own record holds its result
	LinkAmbiguous = "ambiguous" // a step-level result with no call id, attached to every call of the step
	LinkNone      = "none"      // no result was found
)

// Run is one Storyline: a main agent trajectory or one of its subagents.
// Within one source, SessionID is unique per Storyline; RunID groups a main
// Storyline with its subagents and continuation segments.
type Run struct {
	File              string     `parquet:"_file_" json:"_file_"`
	RunID             string     `parquet:"run_id" json:"run_id"`
	SessionID         string     `parquet:"session_id" json:"session_id"`
	OriginalSessionID *string    `parquet:"original_session_id,optional" json:"original_session_id"`
	TrajectoryID      *string    `parquet:"trajectory_id,optional" json:"trajectory_id"`
	ParentSessionID   *string    `parquet:"parent_session_id,optional" json:"parent_session_id"`
	AgentID           *string    `parquet:"agent_id,optional" json:"agent_id"`
	AgentName         *string    `parquet:"agent_name,optional" json:"agent_name"`
	AgentVersion      *string    `parquet:"agent_version,optional" json:"agent_version"`
	AgentModelName    *string    `parquet:"agent_model_name,optional" json:"agent_model_name"`
	StartedAt         *time.Time `parquet:"started_at,optional,timestamp(microsecond)" json:"started_at"`
	EndedAt           *time.Time `parquet:"ended_at,optional,timestamp(microsecond)" json:"ended_at"`
	Status            string     `parquet:"status" json:"status"`
	// Reward and Scores are the evaluation outcome the producer recorded
	// (Inspect scores, SWE-agent exit status, OpenHands test results,
	// Harbor trial rewards): Reward the single number a user sorts by,
	// Scores every recorded score as a JSON object.
	Reward           *float64 `parquet:"reward,optional" json:"reward" since:"2"`
	Scores           *string  `parquet:"scores,optional" json:"scores" text:"free" since:"2"`
	StepCount        int64    `parquet:"step_count" json:"step_count"`
	ToolCallCount    int64    `parquet:"tool_call_count" json:"tool_call_count"`
	PromptTokens     *int64   `parquet:"prompt_tokens,optional" json:"prompt_tokens"`
	CompletionTokens *int64   `parquet:"completion_tokens,optional" json:"completion_tokens"`
	CachedTokens     *int64   `parquet:"cached_tokens,optional" json:"cached_tokens"`
	CostUSD          *float64 `parquet:"cost_usd,optional" json:"cost_usd"`
	// Reported totals are what the document itself claims (ATIF
	// final_metrics, Codex cumulative token_count, mini-swe-agent
	// model_stats). They may include subagents or earlier segments, so they
	// are never mixed with the computed columns above.
	ReportedPromptTokens     *int64   `parquet:"reported_prompt_tokens,optional" json:"reported_prompt_tokens"`
	ReportedCompletionTokens *int64   `parquet:"reported_completion_tokens,optional" json:"reported_completion_tokens"`
	ReportedCachedTokens     *int64   `parquet:"reported_cached_tokens,optional" json:"reported_cached_tokens"`
	ReportedCostUSD          *float64 `parquet:"reported_cost_usd,optional" json:"reported_cost_usd"`
	ReportedStepCount        *int64   `parquet:"reported_step_count,optional" json:"reported_step_count"`
	// ContinuedTrajectoryRef is the next segment's reference as written in
	// the document (ATIF continued_trajectory_ref), never followed.
	ContinuedTrajectoryRef *string `parquet:"continued_trajectory_ref,optional" json:"continued_trajectory_ref"`
	// SubagentRefs is a JSON array of SubagentRef, or NULL when none.
	SubagentRefs *string `parquet:"subagent_refs,optional" json:"subagent_refs" text:"free"`
	SourceFormat string  `parquet:"source_format" json:"source_format"`
	// Extra is a JSON object with everything the source had that no column
	// holds, or NULL.
	Extra *string `parquet:"extra,optional" json:"extra" text:"free"`
	// ImportFile is the input a Storyline store's row was imported from,
	// as pchronicle import named it (relative to its SRC): the store is one
	// source, so its _file_ is the store's path and cannot say it. NULL
	// for rows not read from an imported store.
	ImportFile *string `parquet:"import_file,optional" json:"import_file,omitempty" since:"3"`
}

// SubagentRef is one link from a Storyline to a subagent Storyline, as
// recorded in the subagent_refs JSON column.
type SubagentRef struct {
	// StepID is the step whose observation carried the reference.
	StepID         string `json:"step_id,omitempty"`
	TrajectoryID   string `json:"trajectory_id,omitempty"`
	TrajectoryPath string `json:"trajectory_path,omitempty"`
	SessionID      string `json:"session_id,omitempty"`
	// Embedded is true when the subagent is embedded in the same document
	// (ATIF 1.7 subagent_trajectories); its Storyline is in the same source.
	Embedded bool `json:"embedded"`
	// ChildSessionID is the session_id of the embedded child Storyline in
	// this source, when it was resolved.
	ChildSessionID string `json:"child_session_id,omitempty"`
}

// Step is one message-level unit of a Storyline: a system prompt, a user
// turn, an agent turn (usually one LLM call), or a tool result that a format
// records as its own message.
type Step struct {
	File      string `parquet:"_file_" json:"_file_"`
	RunID     string `parquet:"run_id" json:"run_id"`
	SessionID string `parquet:"session_id" json:"session_id"`
	// StepID is the step's identifier as the source names it (ATIF step_id,
	// message index, line number); unique within the Storyline.
	StepID    string `parquet:"step_id" json:"step_id"`
	StepIndex int64  `parquet:"step_index" json:"step_index"`
	Source    string `parquet:"source" json:"source"`
	// MessageKind is text, multimodal, tool_calls_only, refusal, reasoning,
	// system_op, or a source item type.
	MessageKind      string     `parquet:"message_kind" json:"message_kind"`
	MessageValue     *string    `parquet:"message_value,optional" json:"message_value" text:"free"`
	Reasoning        *string    `parquet:"reasoning,optional" json:"reasoning" text:"free"`
	ModelName        *string    `parquet:"model_name,optional" json:"model_name"`
	Timestamp        *time.Time `parquet:"timestamp,optional,timestamp(microsecond)" json:"timestamp"`
	PromptTokens     *int64     `parquet:"prompt_tokens,optional" json:"prompt_tokens"`
	CompletionTokens *int64     `parquet:"completion_tokens,optional" json:"completion_tokens"`
	CachedTokens     *int64     `parquet:"cached_tokens,optional" json:"cached_tokens"`
	ReasoningTokens  *int64     `parquet:"reasoning_tokens,optional" json:"reasoning_tokens"`
	CostUSD          *float64   `parquet:"cost_usd,optional" json:"cost_usd"`
	LLMCallCount     *int64     `parquet:"llm_call_count,optional" json:"llm_call_count"`
	IsCopiedContext  bool       `parquet:"is_copied_context" json:"is_copied_context"`
	// Observation holds step-level observation content that is not a tool
	// result (system operations, results of non-tool actions), as text.
	Observation *string `parquet:"observation,optional" json:"observation" text:"free"`
	Extra       *string `parquet:"extra,optional" json:"extra" text:"free"`
}

// ToolCall is one tool invocation made by an agent step, with its result
// linked when the source records one.
type ToolCall struct {
	File       string `parquet:"_file_" json:"_file_"`
	RunID      string `parquet:"run_id" json:"run_id"`
	SessionID  string `parquet:"session_id" json:"session_id"`
	StepID     string `parquet:"step_id" json:"step_id"`
	ToolCallID string `parquet:"tool_call_id" json:"tool_call_id"`
	// CallIndex orders calls within the Storyline (0-based).
	CallIndex    int64  `parquet:"call_index" json:"call_index"`
	FunctionName string `parquet:"function_name" json:"function_name"`
	// Arguments is the raw arguments text as recorded (JSON text for formats
	// that store objects). ArgumentsValid says whether it parses as JSON.
	Arguments      *string `parquet:"arguments,optional" json:"arguments" text:"free"`
	ArgumentsValid bool    `parquet:"arguments_valid" json:"arguments_valid"`
	Result         *string `parquet:"result,optional" json:"result" text:"free"`
	ResultStatus   string  `parquet:"result_status" json:"result_status"`
	// ResultStepID is the step that carried the result when it differs from
	// the calling step (OpenAI tool messages, Codex outputs).
	ResultStepID *string `parquet:"result_step_id,optional" json:"result_step_id"`
	ResultLink   string  `parquet:"result_link" json:"result_link"`
	Extra        *string `parquet:"extra,optional" json:"extra" text:"free"`
}

// Event is one canonical event (the events relation and the canonical wire
// schema). Events are facts written by producers; they are never derived
// from a Storyline.
type Event struct {
	File          string    `parquet:"_file_" json:"_file_"`
	EventID       string    `parquet:"event_id" json:"event_id"`
	TraceID       *string   `parquet:"trace_id,optional" json:"trace_id"`
	RunID         string    `parquet:"run_id" json:"run_id"`
	SessionID     string    `parquet:"session_id" json:"session_id"`
	AgentID       *string   `parquet:"agent_id,optional" json:"agent_id"`
	Seq           int64     `parquet:"seq" json:"seq"`
	TS            time.Time `parquet:"ts,timestamp(microsecond)" json:"ts"`
	Kind          string    `parquet:"kind" json:"kind"`
	ParentEventID *string   `parquet:"parent_event_id,optional" json:"parent_event_id"`
	StepID        *string   `parquet:"step_id,optional" json:"step_id"`
	ToolCallID    *string   `parquet:"tool_call_id,optional" json:"tool_call_id"`
	Payload       string    `parquet:"payload" json:"payload"`
}

// Warning records a deviation from a format that was read leniently, or a
// problem that did not stop normalization. Location is as precise as the
// format allows: a line for JSONL, a JSON pointer for JSON documents.
type Warning struct {
	File    string `json:"file,omitempty"`
	Line    int64  `json:"line,omitempty"`
	Pointer string `json:"pointer,omitempty"`
	Message string `json:"message"`
}

func (w Warning) String() string {
	s := w.File
	if w.Line > 0 {
		s += ":" + itoa(w.Line)
	}
	if w.Pointer != "" {
		s += "#" + w.Pointer
	}
	if s != "" {
		s += ": "
	}
	return s + w.Message
}

// Storyline is one normalized trajectory: its run row with its steps and
// tool calls, plus the warnings raised while normalizing it.
//
// A long run may be delivered in parts, to receivers that accept them
// (format.Source.Parts): every part but the last has More set and carries
// rows already finalized (Tally.Rows) and the run's identity, not its row;
// the last part carries the run row, complete, and the remaining rows. The
// run's warnings are those of all its parts. See docs/architecture.md.
type Storyline struct {
	Run       Run
	Steps     []Step
	ToolCalls []ToolCall
	Warnings  []Warning
	// More: further parts of this run follow; Run is not yet a row.
	More bool
}

// SetSessionID gives the Storyline, and every row of it, another session id.
func (s *Storyline) SetSessionID(id string) {
	s.Run.SessionID = id
	for i := range s.Steps {
		s.Steps[i].SessionID = id
	}
	for i := range s.ToolCalls {
		s.ToolCalls[i].SessionID = id
	}
}

// Finalize fills the columns every adapter derives the same way: _file_ and
// identity on child rows, counts, and token totals computed from steps.
// Copied-context steps (and their tool calls) repeat earlier work, so they
// stay as rows but are excluded from counts and totals. Adapters call
// it once after building the Storyline.
func (s *Storyline) Finalize(file string) {
	var t Tally
	t.Rows(s, file)
	t.Run(s, file)
}

// Tally is Finalize for a run emitted in parts: Rows finalizes each part's
// rows, numbering them on from the parts before, and Run fills the last
// part's run row from the rows of all of them.
type Tally struct {
	nextStep, nextCall                  int64
	steps, calls                        int64
	prompt, completion, cached          int64
	cost                                float64
	hasPrompt, hasCompletion, hasCached bool
	hasCost                             bool
	copied                              map[string]bool // made only when there are copied steps: most Storylines have none
}

// Rows fills _file_, identity and indexes on the rows of s (from its Run's
// identity) and adds them to the totals.
func (t *Tally) Rows(s *Storyline, file string) {
	for i := range s.Steps {
		st := &s.Steps[i]
		st.File, st.RunID, st.SessionID = file, s.Run.RunID, s.Run.SessionID
		st.StepIndex = t.nextStep
		t.nextStep++
		if st.IsCopiedContext {
			if t.copied == nil {
				t.copied = map[string]bool{}
			}
			t.copied[st.StepID] = true
			continue
		}
		t.steps++
		if st.PromptTokens != nil {
			t.prompt += *st.PromptTokens
			t.hasPrompt = true
		}
		if st.CompletionTokens != nil {
			t.completion += *st.CompletionTokens
			t.hasCompletion = true
		}
		if st.CachedTokens != nil {
			t.cached += *st.CachedTokens
			t.hasCached = true
		}
		if st.CostUSD != nil {
			t.cost += *st.CostUSD
			t.hasCost = true
		}
	}
	for i := range s.ToolCalls {
		tc := &s.ToolCalls[i]
		tc.File, tc.RunID, tc.SessionID = file, s.Run.RunID, s.Run.SessionID
		tc.CallIndex = t.nextCall
		t.nextCall++
		if tc.ResultStatus == "" {
			tc.ResultStatus = ResultMissing
		}
		if tc.ResultLink == "" {
			tc.ResultLink = LinkNone
		}
		if !t.copied[tc.StepID] {
			t.calls++
		}
	}
}

// Run fills the run row of s, the last part, with the counts and totals
// of every part's rows, and the file of its warnings.
func (t *Tally) Run(s *Storyline, file string) {
	s.Run.File = file
	s.Run.StepCount = t.steps
	s.Run.ToolCallCount = t.calls
	s.Run.PromptTokens = optInt(t.hasPrompt, t.prompt)
	s.Run.CompletionTokens = optInt(t.hasCompletion, t.completion)
	s.Run.CachedTokens = optInt(t.hasCached, t.cached)
	if t.hasCost {
		cost := t.cost
		s.Run.CostUSD = &cost
	} else {
		s.Run.CostUSD = nil
	}
	if s.Run.Status == "" {
		s.Run.Status = StatusUnknown
	}
	for i := range s.Warnings {
		if s.Warnings[i].File == "" {
			s.Warnings[i].File = file
		}
	}
}

func optInt(ok bool, v int64) *int64 {
	if !ok {
		return nil
	}
	return &v
}
