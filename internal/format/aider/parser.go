package aider

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/pchronicle/pchronicle/internal/format"
	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

// Tool-call names: what this adapter records as tool calls (see
// docs/formats.md, Aider section).
const (
	callShell = "shell" // a command Aider ran from the reply ("Running <command>")
	callEdit  = "edit"  // an edit Aider applied from the reply ("Applied edit to <path>")
)

// kind is what a line of the history is.
type kind int

const (
	blank kind = iota
	userLine
	toolLine
	textLine
)

// classify tells the three writers apart. Aider writes user input and its
// own output with a trailing Markdown line break (two spaces); a reply's
// Markdown is written as the model produced it, so a quote or heading in a
// reply (or a ">>>>>>> REPLACE" edit marker) is not taken for either.
func classify(line string) kind {
	switch {
	case strings.TrimSpace(line) == "":
		return blank
	case strings.HasPrefix(line, "####") && strings.HasSuffix(line, "  "):
		return userLine
	case strings.HasPrefix(line, ">") && strings.HasSuffix(line, "  "):
		return toolLine
	}
	return textLine
}

// block is a run of lines of one kind: one step.
type block struct {
	kind  kind
	line  int64 // of its first line
	lines []string
}

// parser splits the history into sections and blocks.
type parser struct {
	src  format.Source
	emit format.Emit
	cur  *section
	blk  block
}

func (p *parser) line(n int64, raw []byte) error {
	line := string(raw)
	if strings.HasPrefix(line, startedMarker) {
		if err := p.endSection(); err != nil {
			return err
		}
		p.cur = newSection(n, strings.TrimSpace(strings.TrimPrefix(line, startedMarker)))
		return nil
	}
	k := classify(line)
	if p.cur == nil {
		if k == blank {
			return nil
		}
		// Text before any header (detection only lets it through in
		// fuzzing): a section named after its first line.
		p.cur = newSection(n, "")
	}
	switch {
	case k == blank && p.blk.kind == textLine:
		p.blk.lines = append(p.blk.lines, "") // a paragraph break in a reply
		return nil
	case k == blank:
		p.endBlock() // user input and tool output end at a blank line
		return nil
	case k != p.blk.kind:
		p.endBlock()
		p.blk = block{kind: k, line: n}
	}
	switch k {
	case userLine:
		line = strings.TrimPrefix(strings.TrimPrefix(line, "####"), " ")
	case toolLine:
		line = strings.TrimPrefix(strings.TrimPrefix(line, ">"), " ")
	}
	if k != textLine {
		line = strings.TrimSuffix(line, "  ")
	}
	p.blk.lines = append(p.blk.lines, line)
	return nil
}

func (p *parser) endBlock() {
	if p.blk.kind != blank && p.cur != nil {
		p.cur.add(p.blk)
	}
	p.blk = block{}
}

func (p *parser) endSection() error {
	p.endBlock()
	if p.cur == nil {
		return nil
	}
	sl := p.cur.finish(p.src)
	p.cur = nil
	return p.emit(sl)
}

// section builds one Storyline.
type section struct {
	sl        *model.Storyline
	header    int64
	lastAgent int  // index of the latest agent step, -1 before any
	sawTurn   bool // a user or agent step has been seen (later output is tool output)
	tokensFor int  // the agent step the next token report belongs to, -1 when none
	model     struct{ weak, editFormat string }
}

func newSection(line int64, started string) *section {
	s := &section{sl: &model.Storyline{}, header: line, lastAgent: -1, tokensFor: -1}
	run := &s.sl.Run
	run.SourceFormat = format.Aider + "/" + Layout
	run.AgentName = model.Str("aider")
	id := started
	if id == "" {
		id = "line-" + strconv.FormatInt(line, 10)
		s.warn(line, "history text before any \"# aider chat started at\" header; read as a section of its own")
	} else if t, ok := format.ParseTimeString(started); ok {
		run.StartedAt = model.Time(t) // local time as Aider wrote it, read as UTC
	} else {
		s.warn(line, "section start time "+strconv.Quote(started)+" is not a timestamp")
	}
	run.RunID, run.SessionID = id, id
	return s
}

func (s *section) warn(line int64, msg string) {
	s.sl.Warnings = append(s.sl.Warnings, model.Warning{Line: line, Message: msg})
}

func (s *section) add(b block) {
	st := model.Step{StepID: strconv.FormatInt(b.line, 10), MessageKind: format.KindText}
	text := strings.Join(b.lines, "\n")
	switch b.kind {
	case userLine:
		st.Source = model.SourceUser
		s.sawTurn, s.tokensFor = true, -1
	case textLine:
		st.Source = model.SourceAgent
		text = strings.TrimSpace(text)
		s.sawTurn, s.tokensFor = true, len(s.sl.Steps)
		s.lastAgent = len(s.sl.Steps)
	case toolLine:
		st.Source = model.SourceTool
		if !s.sawTurn {
			st.Source = model.SourceSystem // the start-up report before the first turn
		}
	}
	st.MessageValue = model.StrAlways(text)
	s.sl.Steps = append(s.sl.Steps, st)
	if b.kind == toolLine {
		for i, line := range b.lines {
			s.toolOutput(b.line+int64(i), line)
		}
	}
}

// Report lines Aider writes that map to columns.
var (
	versionLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^Aider v(\S+)`) })
	modelLine   = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(?:Main model|Model): (\S+) with (\S+) edit format`)
	})
	weakLine   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^Weak model: (\S+)`) })
	tokensLine = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^Tokens: ([\d.]+[kM]?) sent(?:, ([\d.]+[kM]?) cache write)?(?:, ([\d.]+[kM]?) cache hit)?, ([\d.]+[kM]?) received\.(?: Cost: \$([\d.]+) message, \$([\d.]+) session\.)?`)
	})
)

// toolOutput reads one line of Aider's output (line n of the file) for
// what it reports: version and models, token counts and cost of the reply
// before it, commands run and edits applied.
func (s *section) toolOutput(n int64, line string) {
	run := &s.sl.Run
	switch {
	case strings.HasPrefix(line, "Running "):
		s.call(n, callShell, map[string]string{"command": strings.TrimPrefix(line, "Running ")}, nil)
	case strings.HasPrefix(line, "Applied edit to "):
		s.call(n, callEdit, map[string]string{"path": strings.TrimPrefix(line, "Applied edit to ")}, model.Str(line))
	case tokensLine().MatchString(line):
		s.tokens(n, tokensLine().FindStringSubmatch(line))
	case versionLine().MatchString(line) && run.AgentVersion == nil:
		run.AgentVersion = model.Str(versionLine().FindStringSubmatch(line)[1])
	case modelLine().MatchString(line) && run.AgentModelName == nil:
		m := modelLine().FindStringSubmatch(line)
		run.AgentModelName, s.model.editFormat = model.Str(m[1]), m[2]
	case weakLine().MatchString(line) && s.model.weak == "":
		s.model.weak = weakLine().FindStringSubmatch(line)[1]
	}
}

// call records a tool call reported on line n, made by the latest reply.
// An edit's report is also its result; a command's output is not written
// to the history, so a shell call has no result.
func (s *section) call(n int64, name string, args map[string]string, result *string) {
	report := s.sl.Steps[len(s.sl.Steps)-1].StepID
	step := report
	if s.lastAgent >= 0 {
		step = s.sl.Steps[s.lastAgent].StepID
	} else {
		s.warn(n, name+" reported before any reply; recorded on the output step")
	}
	raw, _ := jsonx.Marshal(args)
	tc := model.ToolCall{StepID: step, FunctionName: name, Arguments: model.Str(string(raw)), ArgumentsValid: true}
	if result != nil {
		tc.Result, tc.ResultStatus, tc.ResultLink = result, model.ResultOK, model.LinkInline
		if report != step {
			tc.ResultStepID = model.Str(report)
		}
	}
	s.sl.ToolCalls = append(s.sl.ToolCalls, tc)
}

// tokens puts a token report on the reply it follows: "sent" →
// prompt_tokens, "received" → completion_tokens, "cache hit" →
// cached_tokens, "cache write" → extra, the message cost → cost_usd; the
// session cost is the run's reported cost. Aider rounds counts of 1000 and
// more ("3.2k").
func (s *section) tokens(n int64, m []string) {
	if s.tokensFor < 0 || s.sl.Steps[s.tokensFor].PromptTokens != nil {
		s.warn(n, "token report with no reply before it; kept in the output text only")
		return
	}
	st := &s.sl.Steps[s.tokensFor]
	st.PromptTokens, st.CompletionTokens, st.CachedTokens = count(m[1]), count(m[4]), count(m[3])
	if w := count(m[2]); w != nil {
		st.Extra = format.MergeExtra(st.Extra, "cache_write_tokens", jsonx.RawMessage(strconv.FormatInt(*w, 10)))
	}
	if c, err := strconv.ParseFloat(m[5], 64); err == nil {
		st.CostUSD = model.Float(c)
	}
	if c, err := strconv.ParseFloat(m[6], 64); err == nil {
		s.sl.Run.ReportedCostUSD = model.Float(c)
	}
}

// count reads a token count as Aider prints it: 950, 3.2k, 12k, 1.5M.
func count(s string) *int64 {
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1e3, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "M"):
		mult, s = 1e6, strings.TrimSuffix(s, "M")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || s == "" {
		return nil
	}
	return model.Int(int64(f*mult + 0.5))
}

func (s *section) finish(src format.Source) *model.Storyline {
	sl := s.sl
	extra := map[string]jsonx.RawMessage{}
	for k, v := range map[string]string{"weak_model": s.model.weak, "edit_format": s.model.editFormat} {
		if v != "" {
			extra[k], _ = jsonx.Marshal(v)
		}
	}
	sl.Run.Extra = format.Extra(extra)
	if missing := format.UnansweredCalls(sl.ToolCalls); missing > 0 {
		s.warn(s.header, fmt.Sprintf("%d shell command(s) have no result: Aider does not write command output to the history", missing))
	}
	sl.Finalize(src.File)
	return sl
}
