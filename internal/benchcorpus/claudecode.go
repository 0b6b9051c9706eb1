package benchcorpus

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// Claude Code sessions at real sizes. A real session file is a few MB:
// hundreds of tool calls, each assistant API response written as one line
// per content block (thinking, text, tool_use) sharing message.id and
// usage, tool results as user lines with a toolUseResult copy, progress
// lines while commands and hooks run, file-history snapshots, system lines,
// and the lines of Task subagents (isSidechain) interleaved with the main
// conversation. The envelope members and their order follow Claude Code
// 2.x transcripts.

// ClaudeSessionBytes is the size of one generated session file.
const ClaudeSessionBytes = 3 << 20

// ccLine is the envelope of a transcript line, members in Claude Code's
// order (omitted when empty).
type ccLine struct {
	ParentUUID      *string `json:"parentUuid"`
	IsSidechain     bool    `json:"isSidechain"`
	UserType        string  `json:"userType"`
	Cwd             string  `json:"cwd"`
	SessionID       string  `json:"sessionId"`
	Version         string  `json:"version"`
	GitBranch       string  `json:"gitBranch"`
	AgentID         string  `json:"agentId,omitempty"`
	Slug            string  `json:"slug,omitempty"`
	Type            string  `json:"type"`
	Subtype         string  `json:"subtype,omitempty"`
	Content         string  `json:"content,omitempty"`
	Data            any     `json:"data,omitempty"`
	ParentToolUseID string  `json:"parentToolUseID,omitempty"`
	ToolUseID       string  `json:"toolUseID,omitempty"`
	RequestID       string  `json:"requestId,omitempty"`
	Message         any     `json:"message,omitempty"`
	ToolUseResult   any     `json:"toolUseResult,omitempty"`
	UUID            string  `json:"uuid"`
	Timestamp       string  `json:"timestamp"`
}

type ccMessage struct {
	ID           string   `json:"id,omitempty"`
	Type         string   `json:"type,omitempty"`
	Role         string   `json:"role"`
	Model        string   `json:"model,omitempty"`
	Content      any      `json:"content"`
	StopReason   *string  `json:"stop_reason,omitempty"`
	StopSequence *string  `json:"stop_sequence,omitempty"`
	Usage        *ccUsage `json:"usage,omitempty"`
}

type ccUsage struct {
	InputTokens              int    `json:"input_tokens"`
	CacheCreationInputTokens int    `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int    `json:"cache_read_input_tokens"`
	OutputTokens             int    `json:"output_tokens"`
	ServiceTier              string `json:"service_tier"`
}

// claudeGen writes one session.
type claudeGen struct {
	g        *gen
	w        *lineWriter
	session  string
	n        int // line counter, for uuids
	parent   *string
	clock    time.Time
	msgs     int
	subagent int
	err      error // the first encoding error
}

// claude writes sessions of ClaudeSessionBytes until target bytes.
func (c *ShapeCorpus) claude(target int64) error {
	g := &gen{rng: rand.New(rand.NewPCG(7, 7^0x9e3779b97f4a7c15))}
	for k := 0; c.Bytes < target; k++ {
		id := fmt.Sprintf("5f1c2a9e-7b3d-4e8f-9a1b-%012x", k)
		w, err := c.create(fmt.Sprintf("projects/-home-dev-project-%02d/%s.jsonl", k%8, id))
		if err != nil {
			return err
		}
		cg := &claudeGen{g: g, w: w, session: id, clock: time.Date(2026, 2, 10, 9, 0, 0, 0, time.UTC).Add(time.Duration(k) * time.Hour)}
		if err := cg.session1(); err != nil {
			w.close()
			return err
		}
		if err := w.close(); err != nil {
			return err
		}
		c.Copies++
	}
	return nil
}

func (cg *claudeGen) uuid() string {
	cg.n++
	return fmt.Sprintf("%08x-1e2d-4c3b-8a79-%012x", cg.n, cg.n*7919)
}

func (cg *claudeGen) tick(max time.Duration) string {
	cg.clock = cg.clock.Add(time.Duration(cg.g.rng.Int64N(int64(max))) + time.Millisecond)
	return cg.clock.Format("2006-01-02T15:04:05.000Z")
}

func (cg *claudeGen) emit(l ccLine, side bool, agent string) {
	l.IsSidechain, l.AgentID = side, agent
	l.UserType, l.Cwd, l.SessionID, l.Version, l.GitBranch, l.Slug = "external", "/home/dev/project", cg.session, "2.0.49", "main", "lively-noodling-mitten"
	if l.UUID == "" {
		l.UUID = cg.uuid()
	}
	if l.Type != "progress" {
		l.ParentUUID = cg.parent
		u := l.UUID
		cg.parent = &u
	}
	b, err := jsonx.Marshal(l)
	if err != nil && cg.err == nil {
		cg.err = err
	}
	cg.w.line(b)
}

var ccTools = []string{"Bash", "Read", "Edit", "Grep", "Glob", "Write", "TodoWrite"}

// session1 writes user turns, each followed by assistant work of tool
// rounds, until the file reaches its size; one turn in five delegates to a
// Task subagent whose lines are interleaved.
func (cg *claudeGen) session1() error {
	g := cg.g
	snap := cg.uuid()
	cg.w.line([]byte(`{"type":"file-history-snapshot","messageId":"` + snap + `","snapshot":{"messageId":"` + snap +
		`","trackedFileBackups":{},"timestamp":"` + cg.tick(time.Second) + `"},"isSnapshotUpdate":false}`))
	for turn := 0; cg.w.n < ClaudeSessionBytes; turn++ {
		cg.emit(ccLine{Type: "user", Message: ccMessage{Role: "user", Content: g.text(120 + g.rng.IntN(600))}, Timestamp: cg.tick(time.Minute)}, false, "")
		rounds := 4 + g.rng.IntN(10)
		for r := 0; r < rounds; r++ {
			cg.round(false, "", r == 0 && turn%5 == 4)
		}
		cg.final(false, "")
		cg.emit(ccLine{Type: "system", Subtype: "turn_duration", Content: fmt.Sprintf("Turn took %ds", 5+g.rng.IntN(300)), Timestamp: cg.tick(time.Second)}, false, "")
	}
	return cg.err
}

func (cg *claudeGen) response() (string, *ccUsage) {
	cg.msgs++
	g := cg.g
	return fmt.Sprintf("msg_01%022d", cg.msgs), &ccUsage{InputTokens: 3 + g.rng.IntN(20), CacheCreationInputTokens: g.rng.IntN(4000),
		CacheReadInputTokens: 20000 + g.rng.IntN(80000), OutputTokens: 40 + g.rng.IntN(900), ServiceTier: "standard"}
}

func (cg *claudeGen) assistant(side bool, agent, msgID string, usage *ccUsage, block map[string]any, stop *string) {
	cg.emit(ccLine{Type: "assistant", RequestID: "req_" + msgID[4:],
		Message: ccMessage{ID: msgID, Type: "message", Role: "assistant", Model: "claude-sonnet-4-5-20250929",
			Content: []any{block}, StopReason: stop, Usage: usage},
		Timestamp: cg.tick(4 * time.Second)}, side, agent)
}

// round is one API response (thinking, text, one or two tool calls) and the
// tool results, with progress lines for long commands.
func (cg *claudeGen) round(side bool, agent string, task bool) {
	g := cg.g
	msgID, usage := cg.response()
	if g.rng.IntN(2) == 0 {
		cg.assistant(side, agent, msgID, usage, map[string]any{"type": "thinking", "thinking": g.text(200 + g.rng.IntN(1200)), "signature": strings.Repeat("Eu8B", 40)}, nil)
	}
	cg.assistant(side, agent, msgID, usage, map[string]any{"type": "text", "text": g.text(60 + g.rng.IntN(300))}, nil)
	calls := 1 + g.rng.IntN(2)
	type pending struct{ id, name, result string }
	var ps []pending
	stop := "tool_use"
	for i := 0; i < calls; i++ {
		name := ccTools[g.rng.IntN(len(ccTools))]
		if task && i == 0 {
			name = "Task"
		}
		id := fmt.Sprintf("toolu_01%020d", cg.n*10+i)
		cg.assistant(side, agent, msgID, usage, map[string]any{"type": "tool_use", "id": id, "name": name, "input": cg.input(name)}, &stop)
		ps = append(ps, pending{id: id, name: name})
	}
	for _, p := range ps {
		if p.name == "Task" {
			cg.subagentRun()
		}
		if p.name == "Bash" && g.rng.IntN(3) == 0 {
			cg.progress(side, agent, p.id)
		}
		out := g.toolOutput()
		if p.name == "Read" {
			out += g.toolOutput() + g.toolOutput()
		}
		isErr := g.rng.IntN(20) == 0
		result := map[string]any{"tool_use_id": p.id, "type": "tool_result", "content": out}
		if isErr {
			result["is_error"] = true
		}
		var copied any = map[string]any{"stdout": out, "stderr": "", "interrupted": false, "isImage": false}
		if p.name != "Bash" {
			copied = map[string]any{"type": "text", "file": map[string]any{"filePath": "/home/dev/project/" + g.text(8), "numLines": 40 + g.rng.IntN(400)}}
		}
		cg.emit(ccLine{Type: "user", Message: ccMessage{Role: "user", Content: []any{result}}, ToolUseResult: copied, Timestamp: cg.tick(20 * time.Second)}, side, agent)
	}
}

func (cg *claudeGen) final(side bool, agent string) {
	msgID, usage := cg.response()
	stop := "end_turn"
	cg.assistant(side, agent, msgID, usage, map[string]any{"type": "text", "text": cg.g.text(200 + cg.g.rng.IntN(800))}, &stop)
}

func (cg *claudeGen) input(name string) map[string]any {
	g := cg.g
	path := "/home/dev/project/" + strings.ReplaceAll(g.text(20), " ", "/") + ".go"
	switch name {
	case "Bash":
		return map[string]any{"command": "go test ./... -run " + g.text(10), "description": g.text(30), "timeout": 120000}
	case "Read":
		return map[string]any{"file_path": path}
	case "Edit":
		return map[string]any{"file_path": path, "old_string": g.text(200), "new_string": g.text(240)}
	case "Write":
		return map[string]any{"file_path": path, "content": g.toolOutput()}
	case "Grep":
		return map[string]any{"pattern": g.text(12), "path": "/home/dev/project", "output_mode": "content"}
	case "Glob":
		return map[string]any{"pattern": "**/*.go"}
	case "Task":
		return map[string]any{"description": g.text(30), "prompt": g.text(400), "subagent_type": "general-purpose"}
	}
	return map[string]any{"todos": []any{map[string]any{"content": g.text(40), "status": "in_progress", "activeForm": g.text(40)}}}
}

// progress writes the bash_progress lines of a long command (each holds
// the output so far) and a hook_progress line.
func (cg *claudeGen) progress(side bool, agent, toolID string) {
	g := cg.g
	var out strings.Builder
	for i := 0; i < 3+g.rng.IntN(8); i++ {
		out.WriteString(g.text(80) + "\n")
		cg.emit(ccLine{Type: "progress", Data: map[string]any{"type": "bash_progress", "output": out.String(), "fullOutput": out.String(),
			"elapsedTimeSeconds": i + 1, "totalLines": i + 1}, ToolUseID: "bash-progress-" + toolID, ParentToolUseID: toolID, Timestamp: cg.tick(time.Second)}, side, agent)
	}
	cg.emit(ccLine{Type: "progress", Data: map[string]any{"type": "hook_progress", "hookEvent": "PostToolUse", "hookName": "PostToolUse:Bash", "command": "entire hooks claude-code post-tool-use"},
		ToolUseID: toolID, ParentToolUseID: toolID, Timestamp: cg.tick(time.Second)}, side, agent)
}

// subagentRun writes a Task subagent's lines (isSidechain, its agentId)
// before the Task call's result.
func (cg *claudeGen) subagentRun() {
	cg.subagent++
	agent := fmt.Sprintf("a%07x", cg.subagent)
	main := cg.parent
	cg.parent = nil
	cg.emit(ccLine{Type: "user", Message: ccMessage{Role: "user", Content: cg.g.text(300)}, Timestamp: cg.tick(time.Second)}, true, agent)
	for r := 0; r < 3+cg.g.rng.IntN(5); r++ {
		cg.round(true, agent, false)
	}
	cg.final(true, agent)
	cg.parent = main
}
