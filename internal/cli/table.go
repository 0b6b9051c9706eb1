package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"
	"github.com/rivo/uniseg"
	"golang.org/x/term"
)

// tableWriter collects the rows of the table and markdown formats and
// renders them at Close: column widths depend on every shown row. On a
// terminal the table is boxed like DuckDB's CLI, fits the terminal's width
// (cells cut in the middle, columns left out in the middle when even cut
// cells do not fit) and shows at most maxRows rows, with a footer that
// counts them all (docs/cli.md, "Output formats").
type tableWriter struct {
	columns  []string
	markdown bool
	// width is the terminal's width; 0 off a terminal, where the table
	// keeps its plain layout and only very long cells are cut.
	width   int
	maxRows int // rows kept (0: all)
	// types, when known, are written under the column names on a
	// terminal, as DuckDB's CLI does.
	types   []string
	rows    [][]string
	numeric []int8 // per column: 0 nothing but NULL so far, 1 numbers, -1 something else
	total   int64
}

// plainCell is the longest a cell may be off a terminal.
const plainCell = 60

// minCell is the narrowest a column is cut to before columns are left out.
const minCell = 10

func newTableWriter(columns []string, markdown bool, width, maxRows int) *tableWriter {
	numeric := make([]int8, len(columns))
	return &tableWriter{columns: columns, markdown: markdown, width: width, maxRows: maxRows, numeric: numeric}
}

func (t *tableWriter) write(values []any) {
	t.total++
	for i, v := range values {
		switch v = deref(v); {
		case v == nil || t.numeric[i] < 0:
		case isNumber(v):
			t.numeric[i] = 1
		default:
			t.numeric[i] = -1
		}
	}
	if t.maxRows > 0 && len(t.rows) >= t.maxRows {
		return
	}
	cells := make([]string, len(values))
	for i, v := range values {
		cells[i] = tableCell(v)
	}
	t.rows = append(t.rows, cells)
}

// render writes the table; stopped, when set, says why the result ends
// early (the row cap of --max-output-rows), and goes in the footer.
func (t *tableWriter) render(w io.Writer, stopped string) error {
	boxTypes := t.width > 0 && len(t.types) == len(t.columns)
	widths := make([]int, len(t.columns))
	for i, c := range t.columns {
		widths[i] = text.StringWidthWithoutEscSequences(c)
		if boxTypes {
			widths[i] = max(widths[i], text.StringWidthWithoutEscSequences(t.types[i]))
		}
	}
	for _, r := range t.rows {
		for i, c := range r {
			widths[i] = max(widths[i], text.StringWidthWithoutEscSequences(c))
		}
	}
	shown := make([]int, len(t.columns)) // column indexes, -1 for the "…" column
	for i := range shown {
		shown[i] = i
	}
	switch {
	case t.markdown:
	case t.width > 0:
		shown, widths = fitColumns(widths, t.width)
	default:
		for i := range widths {
			widths[i] = min(widths[i], plainCell)
		}
	}

	tw := table.NewWriter()
	header := make(table.Row, len(shown))
	var configs []table.ColumnConfig
	for j, i := range shown {
		if i < 0 {
			header[j] = "…"
			continue
		}
		header[j] = cutMiddle(t.columns[i], widths[i])
		if boxTypes {
			header[j] = header[j].(string) + "\n" + cutMiddle(t.types[i], widths[i])
		}
		if t.numeric[i] > 0 {
			configs = append(configs, table.ColumnConfig{Number: j + 1, Align: text.AlignRight, AlignHeader: text.AlignRight})
		}
	}
	tw.AppendHeader(header)
	for _, r := range t.rows {
		row := make(table.Row, len(shown))
		for j, i := range shown {
			if i < 0 {
				row[j] = "…"
			} else {
				row[j] = cutMiddle(r[i], widths[i])
			}
		}
		tw.AppendRow(row)
	}
	tw.SetColumnConfigs(configs)
	style := table.StyleLight
	style.Format.Header = text.FormatDefault
	if t.width == 0 && !t.markdown {
		style = plainStyle
	}
	tw.SetStyle(style)
	tw.SuppressTrailingSpaces()

	var out string
	if t.markdown {
		out = tw.RenderMarkdown()
	} else {
		out = tw.Render()
	}
	var b strings.Builder
	b.WriteString(out)
	b.WriteByte('\n')
	if foot := t.footer(len(shown), stopped); foot != "" {
		if t.markdown {
			b.WriteByte('\n')
		}
		b.WriteString(foot)
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// footer counts the rows (and the columns, when some were left out). Off a
// terminal it is written only when rows were left out, so that a piped
// table is the rows and nothing else.
func (t *tableWriter) footer(shownColumns int, stopped string) string {
	var parts []string
	cut := int64(len(t.rows)) < t.total
	if cut || t.width > 0 || stopped != "" {
		s := fmt.Sprintf("%s %s", commas(t.total), plural(t.total, "row", "rows"))
		if stopped != "" {
			s = stopped // it says how many rows came before the cap
		}
		if cut {
			s += fmt.Sprintf(" (%s shown)", commas(int64(len(t.rows))))
		}
		parts = append(parts, s)
	}
	if shown := shownColumns; shown < len(t.columns) {
		parts = append(parts, fmt.Sprintf("%d columns (%d shown)", len(t.columns), shown-1))
	}
	if cut {
		parts = append(parts, "--max-rows 0 shows all")
	}
	foot := strings.Join(parts, "; ")
	if t.width > 0 && text.StringWidthWithoutEscSequences(foot) > t.width {
		foot = strings.Join(parts, "\n")
	}
	return foot
}

// plainStyle is the table off a terminal: columns two spaces apart, no
// borders, as grep, cut and awk expect.
var plainStyle = func() table.Style {
	s := table.StyleDefault
	s.Name = "plain"
	s.Box.PaddingLeft, s.Box.PaddingRight, s.Box.MiddleVertical = "", "", "  "
	s.Format.Header = text.FormatDefault
	s.Options = table.Options{SeparateColumns: true}
	return s
}()

// fitColumns chooses the columns shown in a terminal of the given width and
// their widths: as wide as their content when that fits, else the widest
// are cut first; when even minCell-wide columns do not fit, columns are left
// out from the middle (the first and last stay, as DuckDB does) and a "…"
// column (index -1) marks the gap.
func fitColumns(natural []int, width int) (shown, widths []int) {
	const border = 1 // the left border; each column adds its width + 3
	cost := func(i int) int { return min(natural[i], minCell) + 3 }
	n := len(natural)
	total := border
	for i := range n {
		total += cost(i)
	}
	var left, right []int
	if total <= width {
		for i := range n {
			left = append(left, i)
		}
	} else {
		total = border + 1 + 3 // the "…" column
		for l, r := 0, n-1; l <= r; {
			i := l
			if len(right) < len(left) {
				i = r
			}
			if total+cost(i) > width {
				break
			}
			total += cost(i)
			if i == l {
				left = append(left, i)
				l++
			} else {
				right = append([]int{i}, right...)
				r--
			}
		}
	}
	widths = make([]int, n)
	for _, i := range slicesConcat(left, right) {
		widths[i] = min(natural[i], minCell)
	}
	// Share the room left among the cut columns, a character at a time,
	// so the narrow ones are whole and the wide ones are cut evenly.
	for room := width - total; room > 0; {
		grew := false
		for _, i := range slicesConcat(left, right) {
			if room > 0 && widths[i] < natural[i] {
				widths[i]++
				room--
				grew = true
			}
		}
		if !grew {
			break
		}
	}
	shown = left
	if len(right) > 0 || len(left) < n {
		shown = append(slicesConcat(left, []int{-1}), right...)
	}
	return shown, widths
}

func slicesConcat(a, b []int) []int { return append(append([]int(nil), a...), b...) }

// cutMiddle shortens s to at most width display columns by replacing its
// middle with "…": a path keeps its beginning and its file name. Widths
// are of grapheme clusters, so wide (CJK) and combined characters count as
// the terminal draws them.
func cutMiddle(s string, width int) string {
	if text.StringWidthWithoutEscSequences(s) <= width {
		return s
	}
	if width < 1 {
		return ""
	}
	var clusters []string
	var cw []int
	g := uniseg.NewGraphemes(s)
	for g.Next() {
		clusters = append(clusters, g.Str())
		cw = append(cw, g.Width())
	}
	room := width - 1
	tailRoom := room / 2
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		// A path keeps its file name whole when the cell has room for it
		// and a few characters of its beginning.
		if base := text.StringWidthWithoutEscSequences(s[i:]); base > tailRoom && base <= room-3 {
			tailRoom = base
		}
	}
	var back []string
	used := 0
	for i := len(clusters) - 1; i >= 0 && used+cw[i] <= tailRoom; i-- {
		back = append(back, clusters[i])
		used += cw[i]
	}
	var b strings.Builder
	for i := 0; i < len(clusters) && used+cw[i] <= room; i++ {
		b.WriteString(clusters[i])
		used += cw[i]
	}
	b.WriteString("…")
	for i := len(back) - 1; i >= 0; i-- {
		b.WriteString(back[i])
	}
	return b.String()
}

// tableCell is a value as one line of a table cell: NULL spelled out,
// floats rounded for reading, and every control character escaped, so a
// hostile trajectory cannot move the cursor or recolour the terminal.
func tableCell(v any) string {
	v = deref(v)
	if v == nil {
		return "NULL"
	}
	return escapeControls(valueText(v, floatReadable))
}

func escapeControls(s string) string {
	clean := true
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteByte(' ')
		case r == '\r':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// terminalWidth is the width of the terminal f is, or 0 when f is not a
// terminal. COLUMNS, when set, wins, as for ls and DuckDB's CLI.
func terminalWidth(w io.Writer) int {
	if !isTerminal(w) {
		return 0
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	if n, _, err := term.GetSize(int(w.(*os.File).Fd())); err == nil && n > 0 {
		return n
	}
	return 80
}

// commas writes n with thousands separators: 3,386.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 {
		return "-" + commas(-n)
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
