package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/jedib0t/go-pretty/v6/text"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/pchronicle/pchronicle/internal/engine"
	"github.com/pchronicle/pchronicle/internal/model"
)

func init() { register(newShowCmd) }

func newShowCmd(e *env) *cobra.Command {
	var (
		session, source string
		full            bool
		noPager         bool
	)
	cmd := &cobra.Command{
		Use:   "show [DATASET] --session ID",
		Short: "Print one Storyline for reading: turns, reasoning, tool calls and results, tokens, outcome",
		Long: `Print one Storyline as a person reads it: a header with the agent, model,
times, tokens, cost and outcome, then every step in order with its text, its
reasoning, the tool calls it made with their arguments and results, and its
tokens.

The Storyline is the one whose session_id is ID; when several sources hold
that session_id, --source picks one (pchronicle find lists the coordinates).
On a terminal the text is coloured (unless NO_COLOR is set) and a Storyline
longer than the screen goes through $PAGER (less -R when unset); elsewhere it
is plain text. Tool results longer than 20 lines are cut in the middle
unless --full.`,
		Example: `  pchronicle show ./runs --session 0195f3a0-1111-7000-8000-00000000e001
  pchronicle show ./runs --session line-2 --source openai/support-chats.jsonl --full`,
		Args: cobra.MaximumNArgs(1),
	}
	ds := addDatasetFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&session, "session", "", "the session_id of the Storyline (required)")
	f.StringVar(&source, "source", "", "the source (its _file_) that holds it, when several do")
	f.BoolVar(&full, "full", false, "print long tool results whole")
	f.BoolVar(&noPager, "no-pager", false, "never page the output")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if session == "" {
			return fmt.Errorf("--session is required: which Storyline to show (pchronicle find lists them)")
		}
		snap, eng, closeAll, err := ds.openEngine(cmd.Context(), firstArg(args))
		if err != nil {
			return err
		}
		defer closeAll()
		key, err := locateStoryline(cmd.Context(), e, eng, session, source)
		if err != nil {
			return err
		}
		r := engine.NewReader(snap, eng.Limits())
		defer r.Close()
		sl, err := r.LoadStoryline(cmd.Context(), key)
		if err != nil {
			return err
		}
		tty := isTerminal(e.stdout)
		var buf bytes.Buffer
		p := storylinePrinter{w: &buf, color: tty && os.Getenv("NO_COLOR") == "", full: full}
		p.print(key, sl)
		if tty && !noPager {
			return page(cmd.Context(), e, buf.Bytes())
		}
		_, err = e.stdout.Write(buf.Bytes())
		return err
	}
	return cmd
}

// locateStoryline finds the one Storyline with the session id, in every
// mounted Dataset, through the runs relation (pruned by _file_ when source
// is given).
func locateStoryline(ctx context.Context, e *env, eng *engine.Engine, session, source string) (engine.StorylineKey, error) {
	var found []engine.StorylineKey
	for _, d := range eng.Snapshot().Datasets {
		q := fmt.Sprintf("SELECT _file_ FROM %s.runs WHERE session_id = %s", engine.Ident(d.Mount.Alias), sqlLiteral(session))
		if source != "" {
			q += " AND _file_ = " + sqlLiteral(source)
		}
		ctx, done := withNormalizing(ctx, e.stderr)
		res, err := eng.Query(ctx, q+" ORDER BY _file_", engine.QueryOptions{})
		done()
		if err != nil {
			return engine.StorylineKey{}, fmt.Errorf("Dataset %s: %w", d.Mount.NamespacePath(), err)
		}
		for _, row := range res.Rows {
			found = append(found, engine.StorylineKey{Dataset: d.Mount.NamespacePath(), File: row[0].(string), SessionID: session})
		}
	}
	switch len(found) {
	case 0:
		where := ""
		if source != "" {
			where = " in " + source
		}
		return engine.StorylineKey{}, fmt.Errorf("no Storyline has session_id %q%s (pchronicle find lists them)", session, where)
	case 1:
		return found[0], nil
	}
	var files []string
	for _, k := range found {
		files = append(files, k.File)
	}
	if len(files) > 5 {
		files = append(files[:5], fmt.Sprintf("and %d more", len(found)-5))
	}
	return engine.StorylineKey{}, fmt.Errorf("%d Storylines have session_id %q (%s): pick one with --source", len(found), session, strings.Join(files, ", "))
}

// page shows out through the user's pager when it is longer than the
// terminal, as git does: $PAGER, or less -R (colours kept, and it quits
// at once when the text fits after all).
func page(ctx context.Context, e *env, out []byte) error {
	f, _ := e.stdout.(*os.File)
	_, rows, err := term.GetSize(int(f.Fd()))
	if err != nil || bytes.Count(out, []byte("\n")) < rows {
		_, err := e.stdout.Write(out)
		return err
	}
	pager := os.Getenv("PAGER")
	if pager == "" {
		pager = "less -R"
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", pager)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(out), e.stdout, e.stderr
	cmd.Env = os.Environ()
	if os.Getenv("LESS") == "" {
		cmd.Env = append(cmd.Env, "LESS=FRX")
	}
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); ok || ctx.Err() != nil {
			return nil // the user quit the pager
		}
		_, werr := e.stdout.Write(out) // no pager: print it all
		return werr
	}
	return nil
}

// storylinePrinter writes a Storyline as text for a person.
type storylinePrinter struct {
	w     io.Writer
	color bool
	full  bool
}

// resultLines is how many lines of a tool result are printed without --full.
const resultLines = 20

func (p *storylinePrinter) paint(c text.Colors, s string) string {
	if !p.color || s == "" {
		return s
	}
	return c.Sprint(s)
}

func (p *storylinePrinter) print(key engine.StorylineKey, sl *model.Storyline) {
	r := sl.Run
	title := r.SessionID
	if r.AgentName != nil {
		title = *r.AgentName + " · " + title
	}
	fmt.Fprintln(p.w, p.paint(text.Colors{text.Bold}, "Storyline "+safeText(title)))
	p.field("source", key.Dataset+" · "+key.File+" ("+r.SourceFormat+")")
	if r.AgentName != nil || r.AgentVersion != nil {
		p.field("agent", strings.TrimSpace(str(r.AgentName)+" "+str(r.AgentVersion)))
	}
	p.field("model", str(r.AgentModelName))
	if r.StartedAt != nil {
		span := r.StartedAt.UTC().Format(time.RFC3339)
		if r.EndedAt != nil {
			span += " → " + r.EndedAt.UTC().Format(time.RFC3339) + " (" + r.EndedAt.Sub(*r.StartedAt).Round(time.Millisecond).String() + ")"
		}
		p.field("time", span)
	}
	p.field("steps", fmt.Sprintf("%d steps, %d tool calls", r.StepCount, r.ToolCallCount))
	p.field("tokens", tokens(r.PromptTokens, r.CompletionTokens, r.CachedTokens, nil))
	if r.CostUSD != nil {
		p.field("cost", "$"+formatFloat(*r.CostUSD, floatReadable))
	}
	calls := map[string][]model.ToolCall{}
	results := map[string][]model.ToolCall{} // results carried by a later step
	for _, c := range sl.ToolCalls {
		calls[c.StepID] = append(calls[c.StepID], c)
		if c.ResultStepID != nil && *c.ResultStepID != c.StepID {
			results[*c.ResultStepID] = append(results[*c.ResultStepID], c)
		}
	}
	for _, s := range sl.Steps {
		fmt.Fprintln(p.w)
		head := fmt.Sprintf("── %d · %s", s.StepIndex, s.Source)
		if s.MessageKind != "" && s.MessageKind != "text" {
			head += " (" + s.MessageKind + ")"
		}
		var meta []string
		if s.Timestamp != nil {
			meta = append(meta, s.Timestamp.UTC().Format("15:04:05"))
		}
		if s.ModelName != nil {
			meta = append(meta, *s.ModelName)
		}
		if t := tokens(s.PromptTokens, s.CompletionTokens, s.CachedTokens, s.ReasoningTokens); t != "" {
			meta = append(meta, t)
		}
		if len(meta) > 0 {
			head += "  " + strings.Join(meta, " · ")
		}
		fmt.Fprintln(p.w, p.paint(sourceColor(s.Source), safeText(head)))
		if s.Reasoning != nil && *s.Reasoning != "" {
			p.block("  ", p.paint(text.Colors{text.Italic, text.Faint}, "thinking: ")+p.paint(text.Colors{text.Italic, text.Faint}, safeText(*s.Reasoning)))
		}
		// A tool step's text is usually the result it carries, which is
		// printed under its call below.
		carried := len(results[s.StepID]) == 1 && results[s.StepID][0].Result != nil && s.MessageValue != nil &&
			strings.TrimSpace(*results[s.StepID][0].Result) == strings.TrimSpace(*s.MessageValue)
		if s.MessageValue != nil && *s.MessageValue != "" && !carried {
			p.block("  ", safeText(*s.MessageValue))
		}
		if s.Observation != nil && *s.Observation != "" {
			p.block("  ", p.paint(text.Colors{text.FgYellow}, "observation: ")+safeText(*s.Observation))
		}
		for _, c := range calls[s.StepID] {
			args := ""
			if c.Arguments != nil {
				args = *c.Arguments
			}
			fmt.Fprintf(p.w, "  %s %s(%s)\n", p.paint(text.Colors{text.FgMagenta}, "→"), p.paint(text.Colors{text.Bold, text.FgMagenta}, safeText(c.FunctionName)), safeText(args))
			if c.ResultStepID == nil || *c.ResultStepID == c.StepID {
				p.result(c)
			}
		}
		for _, c := range results[s.StepID] {
			fmt.Fprintf(p.w, "  %s %s\n", p.paint(text.Colors{text.FgMagenta}, "result of"), p.paint(text.Colors{text.Bold, text.FgMagenta}, safeText(c.FunctionName)))
			p.result(c)
		}
	}
	fmt.Fprintln(p.w)
	outcome := "status " + r.Status
	if r.Reward != nil {
		outcome += ", reward " + formatFloat(*r.Reward, floatReadable)
	}
	if r.Scores != nil {
		outcome += ", scores " + *r.Scores
	}
	fmt.Fprintln(p.w, p.paint(text.Colors{text.Bold}, "outcome: ")+safeText(outcome))
}

func (p *storylinePrinter) field(name, value string) {
	if value == "" {
		return
	}
	fmt.Fprintf(p.w, "  %s %s\n", p.paint(text.Colors{text.Faint}, fmt.Sprintf("%-7s", name)), safeText(value))
}

// result prints a tool call's result, cut in the middle past resultLines
// unless --full.
func (p *storylinePrinter) result(c model.ToolCall) {
	mark := p.paint(text.Colors{text.FgGreen}, "←")
	if c.ResultStatus != "ok" {
		mark = p.paint(text.Colors{text.FgRed}, "← "+c.ResultStatus)
	}
	if c.Result == nil {
		fmt.Fprintf(p.w, "    %s (no result)\n", mark)
		return
	}
	if strings.TrimSpace(*c.Result) == "" {
		fmt.Fprintf(p.w, "    %s (empty)\n", mark)
		return
	}
	lines := strings.Split(strings.TrimRight(safeText(*c.Result), "\n"), "\n")
	if !p.full && len(lines) > resultLines {
		cut := len(lines) - resultLines
		lines = append(append(lines[:resultLines/2:resultLines/2],
			p.paint(text.Colors{text.Faint}, fmt.Sprintf("… %d more lines (--full shows them)", cut))), lines[len(lines)-resultLines/2:]...)
	}
	fmt.Fprintf(p.w, "    %s %s\n", mark, lines[0])
	for _, l := range lines[1:] {
		fmt.Fprintf(p.w, "      %s\n", l)
	}
}

// block prints text indented, every line of it.
func (p *storylinePrinter) block(indent, s string) {
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		fmt.Fprintln(p.w, indent+l)
	}
}

func sourceColor(source string) text.Colors {
	switch source {
	case "user":
		return text.Colors{text.Bold, text.FgCyan}
	case "agent", "assistant":
		return text.Colors{text.Bold, text.FgGreen}
	case "system":
		return text.Colors{text.Bold, text.FgBlue}
	}
	return text.Colors{text.Bold}
}

func tokens(prompt, completion, cached, reasoning *int64) string {
	var parts []string
	add := func(v *int64, what string) {
		if v != nil {
			parts = append(parts, commas(*v)+" "+what)
		}
	}
	add(prompt, "in")
	add(completion, "out")
	add(cached, "cached")
	add(reasoning, "reasoning")
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, ", ") + " tokens"
}

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// safeText keeps line breaks and tabs and escapes every other control
// character: trajectory text is hostile and must not drive the terminal.
func safeText(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = escapeControls(strings.ReplaceAll(l, "\t", "    "))
	}
	return strings.Join(lines, "\n")
}
