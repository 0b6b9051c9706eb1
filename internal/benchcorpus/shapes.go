package benchcorpus

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/pchronicle/pchronicle/internal/jsonx"
)

// Real shapes: corpora made of the public sample files (../shared/samples,
// never copied into the project), repeated until a target size with every
// id made distinct per copy, so that the data has the nesting, key sets and
// value sizes real producers write. Claude Code sessions are generated
// (claudecode.go): no licensed real session is among the samples.

// Shape names, one corpus each.
const (
	ShapeCodex     = "codex"     // Codex CLI rollouts, one session per file
	ShapeATIF      = "atif"      // ATIF trajectory.json documents (Harbor, fast-agent, NeMo, OpenAgents)
	ShapeOpenHands = "openhands" // OpenHands evaluation / resolver output.jsonl (one instance per line)
	ShapeInspect   = "inspect"   // Inspect AI eval logs, JSON form
	ShapeChat      = "chat"      // one big OpenAI chat JSONL with tool calls, one conversation per line
	ShapeATOF      = "atof"      // ATOF (NAT draft dialect) event streams, many agent runs per file
	ShapeClaude    = "claude"    // Claude Code sessions, generated at real sizes
)

// Shapes lists every shape in a stable order.
func Shapes() []string {
	return []string{ShapeCodex, ShapeATIF, ShapeOpenHands, ShapeInspect, ShapeChat, ShapeATOF, ShapeClaude}
}

// ShapeCorpus describes a generated real-shape corpus.
type ShapeCorpus struct {
	Shape  string
	Dir    string
	Files  []string
	Bytes  int64
	Copies int // copies of the sample set (generated sessions for claude)
}

// BuildShape writes about target bytes of the named shape into dir (which
// must not exist or be empty) from the samples in samples. The output is
// the same for the same arguments.
func BuildShape(samples, dir, shape string, target int64) (*ShapeCorpus, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	c := &ShapeCorpus{Shape: shape, Dir: dir}
	var err error
	switch shape {
	case ShapeCodex:
		err = c.copies(samples, target, []string{"openai/codex-rollout_rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl"},
			[]string{"id"}, "call_", func(k int, rel string) string {
				return fmt.Sprintf("sessions/%03d/rollout-2026-02-23T12-41-04-%s.jsonl", k/100, copyUUID(k))
			})
	case ShapeATIF:
		err = c.copies(samples, target, []string{
			"atif/harbor-golden/terminus_2_context-summarization/trajectory.json",
			"atif/harbor-golden/terminus_2_context-summarization/trajectory.summarization-1-summary.json",
			"atif/harbor-golden/terminus_2_linear-history/trajectory.json",
			"atif/harbor-golden/terminus_2_linear-history/trajectory.cont-1.json",
			"atif/harbor-golden/misc/openhands_hello-world.trajectory.json",
			"atif/fast-agent_harbor_multiagent_v1_7.json",
			"atif/nemo-agent-toolkit_exmp04_anthropic_v1_7.atif.json",
			"atif/openagents_tbench-regex-log_nonconformant-1.4.trajectory.json",
		}, []string{"session_id", "trajectory_id"}, "", func(k int, rel string) string {
			return fmt.Sprintf("copy-%05d/%s", k, strings.TrimPrefix(rel, "atif/"))
		})
	case ShapeInspect:
		err = c.copies(samples, target, []string{
			"inspect/docent_intercode-ctf_claude-3-5-sonnet_2-epochs.json",
			"inspect/inspect_ai_2024-11-05T13-31-45-05-00_input-task.json",
			"inspect/inspect_ai_log_tool_call_error.json",
		}, []string{"eval_id", "run_id", "task_id"}, "", func(k int, rel string) string {
			return fmt.Sprintf("logs/%03d/%05d_%s", k/100, k, filepath.Base(rel))
		})
	case ShapeOpenHands:
		err = c.lines(samples, target, 4, []string{
			"openhands/openhands-benchmarks_openagentsafety_v1-sdk_output.jsonl",
			"openhands/openhands_resolver_mock_output.jsonl",
		}, []string{"instance_id"}, "", func(i int) string { return fmt.Sprintf("eval-%02d/output.jsonl", i) })
	case ShapeATOF:
		err = c.atof(samples, target)
	case ShapeChat:
		err = c.chat(samples, target)
	case ShapeClaude:
		err = c.claude(target)
	default:
		err = fmt.Errorf("unknown shape %q (want one of %s)", shape, strings.Join(Shapes(), ", "))
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// copyUUID is a UUID-shaped id distinct per copy.
func copyUUID(k int) string {
	return fmt.Sprintf("019c8a4d-8f45-7010-8b5d-%012x", 0x7fad920a0000+k)
}

// idValues returns the distinct string values of the given keys anywhere in
// a JSON text (by pattern: the samples are valid JSON, so a key followed by
// a colon and a string is a member).
func idValues(data []byte, keys []string) []string {
	var out []string
	for _, k := range keys {
		re := regexp.MustCompile(`"` + regexp.QuoteMeta(k) + `"\s*:\s*"([^"\\]*)"`)
		for _, m := range re.FindAllSubmatch(data, -1) {
			if v := string(m[1]); v != "" && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// distinct makes a copy's ids its own: every JSON string value equal to one
// of ids gets the copy's suffix, and every string value starting with prefix
// (tool call ids) gets the copy's tag after the prefix. Member names are left
// as they are: "call_id" is a name that starts with "call_".
func distinct(data []byte, k int, ids []string, prefix string) []byte {
	tag := fmt.Sprintf("c%05d", k)
	for _, id := range ids {
		data = replaceValues(data, []byte(`"`+id+`"`), []byte(`"`+id+"-"+tag+`"`))
	}
	if prefix != "" {
		data = replaceValues(data, []byte(`"`+prefix), []byte(`"`+prefix+tag+"_"))
	}
	return data
}

// replaceValues is bytes.ReplaceAll of old, which starts a JSON string, by
// new, except where that string is a member name (a colon follows it).
func replaceValues(data, old, new []byte) []byte {
	var out []byte
	last := 0
	for i := 0; ; {
		j := bytes.Index(data[i:], old)
		if j < 0 {
			break
		}
		at := i + j
		i = at + len(old)
		end := at + 1 + bytes.IndexByte(data[at+1:], '"') // the quote that ends the string
		if end <= at || end+1 > len(data) {
			continue
		}
		if rest := bytes.TrimLeft(data[end+1:], " \t\r\n"); len(rest) > 0 && rest[0] == ':' {
			continue
		}
		out = append(append(out, data[last:at]...), new...)
		last = i
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}

func readSamples(samples string, rels []string) ([][]byte, error) {
	out := make([][]byte, len(rels))
	for i, rel := range rels {
		b, err := os.ReadFile(filepath.Join(samples, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func (c *ShapeCorpus) write(rel string, data []byte) error {
	path := filepath.Join(c.Dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	c.Files = append(c.Files, path)
	c.Bytes += int64(len(data))
	return nil
}

// copies writes copies of a set of sample files, each copy with its own ids
// (the values of idKeys and the strings starting with callPrefix), until
// target bytes.
func (c *ShapeCorpus) copies(samples string, target int64, rels, idKeys []string, callPrefix string, name func(k int, rel string) string) error {
	data, err := readSamples(samples, rels)
	if err != nil {
		return err
	}
	ids := make([][]string, len(data))
	for i, d := range data {
		ids[i] = idValues(d, idKeys)
	}
	for k := 0; c.Bytes < target; k++ {
		for i, rel := range rels {
			if err := c.write(name(k, rel), distinct(data[i], k, ids[i], callPrefix)); err != nil {
				return err
			}
		}
		c.Copies++
	}
	return nil
}

// lineWriter appends lines to a corpus file.
type lineWriter struct {
	c    *ShapeCorpus
	f    *os.File
	w    *bufio.Writer
	n    int64
	path string
}

func (c *ShapeCorpus) create(rel string) (*lineWriter, error) {
	path := filepath.Join(c.Dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &lineWriter{c: c, f: f, w: bufio.NewWriterSize(f, 1<<20), path: path}, nil
}

func (w *lineWriter) line(b []byte) {
	w.w.Write(bytes.TrimRight(b, "\r\n"))
	w.w.WriteByte('\n')
	w.n += int64(len(bytes.TrimRight(b, "\r\n")) + 1)
}

func (w *lineWriter) close() error {
	if err := w.w.Flush(); err != nil {
		w.f.Close()
		return err
	}
	w.c.Files = append(w.c.Files, w.path)
	w.c.Bytes += w.n
	return w.f.Close()
}

// lines writes files of JSON lines taken in turn from the samples' lines,
// each copy of a line with its own ids, until target bytes in all.
func (c *ShapeCorpus) lines(samples string, target int64, files int, rels, idKeys []string, callPrefix string, name func(i int) string) error {
	data, err := readSamples(samples, rels)
	if err != nil {
		return err
	}
	var src [][]byte
	for _, d := range data {
		for _, l := range bytes.Split(d, []byte("\n")) {
			if l = bytes.TrimSpace(l); len(l) > 0 {
				src = append(src, l)
			}
		}
	}
	ids := make([][]string, len(src))
	for i, l := range src {
		ids[i] = idValues(l, idKeys)
	}
	k := 0
	for i := 0; i < files; i++ {
		w, err := c.create(name(i))
		if err != nil {
			return err
		}
		for ; w.n < target/int64(files); k++ {
			j := k % len(src)
			w.line(distinct(src[j], k, ids[j], callPrefix))
		}
		if err := w.close(); err != nil {
			return err
		}
	}
	c.Copies = k
	return nil
}

// atof repeats the ATOF sample's agent run in files of about 4 MB: every
// copy with its own uuids and tool call ids, one stream header per file.
func (c *ShapeCorpus) atof(samples string, target int64) error {
	data, err := readSamples(samples, []string{"actf_candidates/nemo-agent-toolkit_exmp02_atof-nat-draft.atof.jsonl"})
	if err != nil {
		return err
	}
	var header []byte
	var events [][]byte
	for _, l := range bytes.Split(data[0], []byte("\n")) {
		if l = bytes.TrimSpace(l); len(l) == 0 {
			continue
		}
		if bytes.Contains(l, []byte(`"kind": "StreamHeader"`)) {
			header = l
			continue
		}
		events = append(events, l)
	}
	ids := idValues(data[0], []string{"uuid", "parent_uuid", "tool_call_id", "id"})
	const fileBytes = 4 << 20
	k := 0
	for i := 0; c.Bytes < target; i++ {
		w, err := c.create(fmt.Sprintf("traces/%03d.atof.jsonl", i))
		if err != nil {
			return err
		}
		w.line(distinct(header, i, ids, ""))
		for ; w.n < fileBytes && c.Bytes+w.n < target; k++ {
			for _, e := range events {
				w.line(distinct(e, k, ids, ""))
			}
		}
		if err := w.close(); err != nil {
			return err
		}
	}
	c.Copies = k
	return nil
}

// chat writes one big chat JSONL with tool calls, its conversations cut
// from the real Codex rollout's items (messages, function calls and their
// outputs) turned into Chat Completions messages: the system and first user
// turn, then a window of tool rounds. Tool call ids are distinct per line.
func (c *ShapeCorpus) chat(samples string, target int64) error {
	data, err := readSamples(samples, []string{"openai/codex-rollout_rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl"})
	if err != nil {
		return err
	}
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	type message struct {
		Role       string `json:"role"`
		Content    any    `json:"content"`
		ToolCalls  []call `json:"tool_calls,omitempty"`
		ToolCallID string `json:"tool_call_id,omitempty"`
	}
	var head, rest []message
	for _, l := range bytes.Split(data[0], []byte("\n")) {
		var env struct {
			Type    string `json:"type"`
			Payload struct {
				Type      string                  `json:"type"`
				Role      string                  `json:"role"`
				Content   []struct{ Text string } `json:"content"`
				Name      string                  `json:"name"`
				Arguments string                  `json:"arguments"`
				CallID    string                  `json:"call_id"`
				Output    string                  `json:"output"`
			} `json:"payload"`
		}
		if jsonx.Unmarshal(l, &env) != nil || env.Type != "response_item" {
			continue
		}
		p := env.Payload
		var m message
		switch p.Type {
		case "message":
			var texts []string
			for _, part := range p.Content {
				texts = append(texts, part.Text)
			}
			role := p.Role
			if role == "developer" {
				role = "system"
			}
			m = message{Role: role, Content: strings.Join(texts, "\n")}
		case "function_call":
			tc := call{ID: p.CallID, Type: "function", Function: fn{Name: p.Name, Arguments: p.Arguments}}
			if n := len(rest); n > 0 && rest[n-1].Role == "assistant" && rest[n-1].ToolCalls != nil {
				rest[n-1].ToolCalls = append(rest[n-1].ToolCalls, tc) // parallel calls
				continue
			}
			m = message{Role: "assistant", Content: nil, ToolCalls: []call{tc}}
		case "function_call_output":
			m = message{Role: "tool", ToolCallID: p.CallID, Content: p.Output}
		default:
			continue
		}
		if len(rest) == 0 && (m.Role == "system" || (m.Role == "user" && !slices.ContainsFunc(head, func(h message) bool { return h.Role == "user" }))) {
			head = append(head, m)
			continue
		}
		rest = append(rest, m)
	}
	w, err := c.create("chats.jsonl")
	if err != nil {
		return err
	}
	// Windows of about 12 messages, starting at an assistant turn.
	var windows [][]message
	for i := 0; i < len(rest); {
		j := min(i+12, len(rest))
		for j < len(rest) && rest[j].Role == "tool" {
			j++ // keep a call's results with it
		}
		windows = append(windows, rest[i:j])
		i = j
	}
	for k := 0; w.n < target; k++ {
		msgs := append(append([]message(nil), head...), windows[k%len(windows)]...)
		line, err := jsonx.Marshal(map[string]any{"messages": msgs})
		if err != nil {
			return err
		}
		w.line(distinct(line, k, nil, "call_"))
		c.Copies++
	}
	return w.close()
}

// Cached returns the corpus of a shape kept in dir (dir/corpus.json
// describes it, dir/data holds it) when it is of about size bytes, else
// builds it there; the benchmarks share their corpora this way.
func Cached(samples, dir, shape string, size int64) (*ShapeCorpus, error) {
	marker := filepath.Join(dir, "corpus.json")
	if b, err := os.ReadFile(marker); err == nil {
		var c ShapeCorpus
		if jsonx.Unmarshal(b, &c) == nil && c.Shape == shape && c.Bytes >= size && c.Bytes < size+size/5 {
			return &c, nil
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "building the %s corpus (%d MB) in %s\n", shape, size>>20, dir)
	c, err := BuildShape(samples, filepath.Join(dir, "data"), shape, size)
	if err != nil {
		return nil, err
	}
	c.Dir = filepath.Join(dir, "data")
	b, err := jsonx.Marshal(c)
	if err != nil {
		return nil, err
	}
	return c, os.WriteFile(marker, b, 0o644)
}
