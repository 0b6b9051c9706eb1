package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pchronicle/pchronicle/internal/testutil"
)

// viewConfig is one window size and theme the samples are read in.
type viewConfig struct {
	name          string
	width, height int64
	theme         string
	every         bool // every Storyline, else the first of each file
}

// sampleConfigs cover the two window sizes in both themes. Every Storyline
// is opened in two of them; the other two open the first Storyline of each
// file, which holds the run time of the package to a few minutes.
var sampleConfigs = []viewConfig{
	{"1400x900-light", 1400, 900, "light", true},
	{"1024x700-dark", 1024, 700, "dark", false},
	{"1400x900-dark", 1400, 900, "dark", false},
	{"1024x700-light", 1024, 700, "light", false},
}

// sampleRun is a run of the samples Dataset as GET /api/runs lists it.
type sampleRun struct {
	File         string `json:"_file_"`
	SessionID    string `json:"session_id"`
	SourceFormat string `json:"source_format"`
}

// TestExplorerSamples opens every Storyline of every file in the shared
// samples, selects its first and its last step, and fails on an uncaught
// exception or console error, on a detail pane that shows nothing (a tool
// call must show its result or the orphan note), and on boxes that overlap
// or push the page sideways.
func TestExplorerSamples(t *testing.T) {
	needChromium(t)
	s := serve(t, "samples="+testutil.SamplesDir(t), "crafted="+craftedDataset(t))
	runs := listRuns(t, s.url, "samples")
	if len(runs) < 100 {
		t.Fatalf("the samples Dataset lists %d runs; want every sample file's runs", len(runs))
	}
	ctx := browser(t, 1400, 900)
	console := watchConsole(t, ctx)
	p := &page{t: t, ctx: ctx, url: s.url}
	p.open("/runs?dataset=samples")
	p.until("the Explorer", `document.querySelector('#runs-table')`)

	t.Run("transcripts", func(t *testing.T) {
		p.t = t
		p.open(storylinePath("crafted", readableFile, "readable", "step", "0"))
		p.until("step 0", `document.querySelector('#step-detail').dataset.step === '0'`)
		var md struct {
			Heading, Strong, Code, Block, Text, Image, Title string
			Items                                            int
		}
		p.eval(`(() => { const m = document.querySelector('#step-detail [data-field=message]'); const q = (s) => (m.querySelector(s) || {}).textContent || '';
			return { heading: q('.md-h1'), strong: q('strong'), code: q('code.md-inline'), block: q('pre.md-code'), items: m.querySelectorAll('li').length,
				text: m.textContent, image: q('.image-ph'), title: document.querySelector('.story-head h1').textContent }; })()`, &md)
		if md.Heading != "Plan" || md.Strong != "the tests" || md.Code != "go vet" || md.Block != "func main() {}" || md.Items != 2 {
			t.Errorf("Markdown not rendered: %+v", md)
		}
		if !strings.Contains(md.Text, "<b>raw html</b> stays text.") {
			t.Errorf("raw HTML in a message must stay text: %q", md.Text)
		}
		if !strings.Contains(md.Image, "image/png") || !strings.Contains(md.Image, "70 B") || strings.Contains(md.Text, tinyPNG) {
			t.Errorf("inline image placeholder: %q (message %q)", md.Image, md.Text)
		}
		if !strings.Contains(md.Title, "notes⟨RLO⟩fdp.trajectory.json") {
			t.Errorf("the file name's right-to-left override is not made visible: %q", md.Title)
		}
		p.shot("transcript-markdown")
		p.click("#step-row-1")
		p.until("step 1", `document.querySelector('#step-detail').dataset.step === '1'`)
		if got := p.str(`document.querySelector('#step-detail pre[data-field=result]').textContent`); got != "FAIL in report⟨RLO⟩fdp.jsonl" {
			t.Errorf("result with ANSI colors and an RLO shows %q", got)
		}
		p.click("#step-row-2")
		p.until("step 2", `document.querySelector('#step-detail').dataset.step === '2'`)
		if got := p.str(`document.querySelector('#step-detail [data-field=message]').textContent`); !strings.Contains(got, "- an item indented as code") {
			t.Errorf("a list item indented as code: %q", got)
		}
		if got := p.str(`document.querySelector('#step-detail .call').textContent`); !strings.Contains(got, "orphan: no result was recorded for this call") || !strings.Contains(got, "no arguments were recorded") {
			t.Errorf("the final call without result or arguments shows %q", got)
		}
		p.shot("transcript-orphan")
		checkNothingRan(t, p)
		if m := console.take(); len(m) > 0 {
			t.Errorf("console: %v", m)
		}
	})

	t.Run("runs", func(t *testing.T) {
		p.t = t
		run(t, ctx, "window", chromedp.EmulateViewport(1400, 900))
		p.open("/runs?dataset=samples&limit=200&sort=_file_")
		p.until("200 runs", `document.querySelectorAll('#runs-table tbody tr').length === 200`)
		var fit struct {
			Main, Table, Window float64
			Task                string
			Labels              string
		}
		p.eval(`(() => { const m = document.querySelector('main'); return { main: m.scrollWidth - m.clientWidth, table: document.querySelector('#runs-table').getBoundingClientRect().width, window: innerWidth,
			task: [...document.querySelectorAll('#runs-table tbody tr')].map(r => r.textContent).find(t => t.includes('docent_intercode-ctf_gpt-4o')) || '',
			labels: [...document.querySelectorAll('select[name=sort] option')].map(o => o.textContent).join('|') }; })()`, &fit)
		if fit.Main > 1 || fit.Table > fit.Window {
			t.Errorf("the runs do not fit %.0f px: main overflows by %.0f px, table %.0f px wide", fit.Window, fit.Main, fit.Table)
		}
		if !regexp.MustCompile(`sample \d+ · epoch 1`).MatchString(fit.Task) {
			t.Errorf("an Inspect sample's row has no task: %q", fit.Task)
		}
		if !strings.Contains(fit.Labels, "steps, most first") || !strings.Contains(fit.Labels, "start time, newest first") || strings.Contains(fit.Labels, "_") {
			t.Errorf("sort menu labels: %s", fit.Labels)
		}
		checkNoOverlap(t, p, "#runs-table tbody tr")
		p.shot("runs-samples")
		// Back returns to where the reader was in the list.
		run(t, ctx, "scroll", js(`document.querySelector('main').scrollTop = 1500`))
		p.until("scrolled", `document.querySelector('main').scrollTop > 1000`)
		top := p.str(`String(document.querySelector('main').scrollTop)`)
		// A script's click: a pointer click would scroll the row into view first.
		run(t, ctx, "open a run", js(`document.querySelector('#runs-table tbody tr:nth-child(60) a.open').click()`))
		p.until("a Storyline", `location.pathname === '/storyline' && document.querySelector('#timeline')`)
		run(t, ctx, "Back", js(`history.back()`))
		p.until("the list again, where it was", `document.querySelectorAll('#runs-table tbody tr').length === 200 && String(document.querySelector('main').scrollTop) === '`+top+`'`)
		// All Datasets: a Dataset column.
		p.open("/runs?limit=25")
		p.until("runs of every Dataset", `[...document.querySelectorAll('#runs-table thead th')].some(th => th.textContent === 'Dataset')`)
		// A subagent under its parent, and the toggle.
		p.open("/runs?dataset=crafted&sort=session_id")
		p.until("grouped", `(c => c && c.previousElementSibling.textContent.includes('team-run') && !c.previousElementSibling.classList.contains('child'))(document.querySelector('#runs-table tr.child'))`)
		p.click("#group-subagents")
		p.until("not grouped", `!document.querySelector('#runs-table tr.child') && location.search.includes('group=0')`)
		p.shot("runs-crafted-ungrouped")
		if m := console.take(); len(m) > 0 {
			t.Errorf("console: %v", m)
		}
	})

	t.Run("run panel", func(t *testing.T) {
		p.t = t
		// An Inspect sample its message limit stopped: target, score with its
		// explanation, the limit.
		p.open(storylinePath("samples", "inspect/docent_intercode-ctf_gpt-4o_subset.eval", "86/epoch-1"))
		p.until("the run panel", `document.querySelector('#run-panel')`)
		var panel struct{ Text, Scores string }
		p.eval(`({ text: document.querySelector('#run-panel').textContent, scores: (document.querySelector('#run-scores') || {}).textContent || '' })`, &panel)
		for _, want := range []string{"target", "ended by limit", `"limit": 50`} {
			if !strings.Contains(panel.Text, want) {
				t.Errorf("run panel lacks %q: %s", want, panel.Text)
			}
		}
		if !strings.Contains(panel.Scores, "includes") {
			t.Errorf("scores: %q", panel.Scores)
		}
		p.shot("run-panel")
		// A tool's message is program output: monospaced as it is, not Markdown.
		p.open(storylinePath("samples", "inspect/docent_intercode-ctf_gpt-4o_subset.eval", "15/epoch-1", "step", "23"))
		p.until("the tool step's message as text", `document.querySelector('#step-detail').dataset.step === '23' && document.querySelector('#step-detail pre.body-text[data-field=message]')`)
		if m := console.take(); len(m) > 0 {
			t.Errorf("console: %v", m)
		}
	})

	t.Run("compare divergence past the first page", func(t *testing.T) {
		p.t = t
		p.open("/compare?" + url.Values{"a_dataset": {"crafted"}, "a_file": {"diverge/a.trajectory.json"}, "a_session_id": {"a"},
			"b_dataset": {"crafted"}, "b_file": {"diverge/b.trajectory.json"}, "b_session_id": {"b"}}.Encode())
		p.until("the first divergence selected", `document.querySelector('#compare-detail').dataset.row === '`+fmt.Sprint(divergeAt)+`'`)
		var got struct {
			Class, Del, Ins string
			Visible         bool
		}
		p.eval(`(() => { const r = document.querySelector('#compare-rows .cmp-row[aria-selected=true]'), box = document.querySelector('#compare-rows').getBoundingClientRect(), b = r.getBoundingClientRect();
			const d = document.querySelector('#compare-detail');
			return { class: r.className, del: [...d.querySelectorAll('del')].map(e => e.textContent).join('|'), ins: [...d.querySelectorAll('ins')].map(e => e.textContent).join('|'),
				visible: b.top >= box.top - 1 && b.bottom <= box.bottom + 1 }; })()`, &got)
		if got.Class != "cmp-row changed" || !got.Visible || got.Del != "" || strings.TrimSpace(got.Ins) != "/tmp" {
			t.Errorf("row %d of the comparison: %+v", divergeAt, got)
		}
		checkNoOverlap(t, p, "#compare-rows .cmp-row", "#compare-sides")
		p.shot("compare-divergence")
	})

	for _, cfg := range sampleConfigs {
		t.Run(cfg.name, func(t *testing.T) {
			p.t = t
			run(t, ctx, "window and theme", chromedp.EmulateViewport(cfg.width, cfg.height),
				js(`localStorage.setItem('pchronicle.theme', '`+cfg.theme+`'); document.documentElement.dataset.theme = '`+cfg.theme+`'`))
			seenFile, seenFormat := map[string]bool{}, map[string]bool{}
			start, opened := time.Now(), 0
			for _, r := range runs {
				first := !seenFile[r.File]
				seenFile[r.File] = true
				if !cfg.every && !first {
					continue
				}
				opened++
				check := func() (res storylineCheck) {
					p.eval(`(`+checkStorylineJS+`)(`+jsonString(storylinePath("samples", r.File, r.SessionID, "step", "0"))+`)`, &res)
					for _, m := range console.take() {
						res.Problems = append(res.Problems, "console: "+m)
					}
					return res
				}
				res := check()
				// Known intermittent: now and then (1–2 of the 300 Storylines
				// of the ShareGPT sample) the page still shows the previous
				// Storyline 20 s after the link; opened again, it shows.
				// Logged, not hidden, until it is understood.
				if len(res.Problems) == 1 && strings.HasPrefix(res.Problems[0], "timed out waiting for step 0") {
					t.Logf("%s · %s: %s; opening it again", r.File, r.SessionID, res.Problems[0])
					res = check()
				}
				if len(res.Problems) > 0 {
					p.shot("samples-failed-" + cfg.name + "-" + safe(r.File+"-"+r.SessionID))
					t.Errorf("%s · %s (%s), %d steps:\n  %s", r.File, r.SessionID, r.SourceFormat, res.Rows, strings.Join(res.Problems, "\n  "))
				}
				if !seenFormat[r.SourceFormat] {
					seenFormat[r.SourceFormat] = true
					p.shot("samples-" + cfg.name + "-" + safe(r.SourceFormat))
				}
			}
			t.Logf("%d Storylines of %d files in %v", opened, len(seenFile), time.Since(start).Round(time.Millisecond))
			// Every other view, in this size and theme.
			for _, v := range []struct{ name, path, ready string }{
				{"catalog", "/?dataset=samples", `document.querySelector('section.dataset')`},
				{"runs", "/runs?dataset=samples&limit=100", `document.querySelectorAll('#runs-table tbody tr').length === 100`},
				{"compare", "/compare?" + url.Values{"a_dataset": {"crafted"}, "a_file": {"diverge/a.trajectory.json"}, "a_session_id": {"a"},
					"b_dataset": {"crafted"}, "b_file": {"diverge/b.trajectory.json"}, "b_session_id": {"b"}}.Encode(), `document.querySelector('#compare-detail').dataset.row`},
				{"search", "/search?dataset=samples&q=error", `document.querySelectorAll('#hits li').length > 0`},
				{"sql", "/sql?dataset=samples&sql=" + url.QueryEscape("SELECT source_format, count(*) AS runs FROM samples.runs GROUP BY 1 ORDER BY 2 DESC"), `document.querySelectorAll('#sql-result tbody tr').length > 5`},
				{"settings", "/settings", `document.querySelector('#access-key')`},
			} {
				p.open(v.path)
				p.until(v.name, v.ready)
				checkNoOverlap(t, p, "#runs-table tbody tr", "#compare-rows .cmp-row", "#compare-sides")
				// The runs fit 1400 px; narrower, their table scrolls sideways. A
				// result table of SQL is as wide as its columns.
				wide := v.name == "sql" || (v.name == "runs" && cfg.width < 1400)
				if w := p.str(`String(document.querySelector('main').scrollWidth - document.querySelector('main').clientWidth)`); w != "0" && !wide {
					t.Errorf("%s scrolls sideways by %s px", v.name, w)
				}
				p.shot("view-" + v.name + "-" + cfg.name)
			}
			if m := console.take(); len(m) > 0 {
				t.Errorf("console: %v", m)
			}
		})
	}
}

// storylineCheck is what checkStorylineJS reports of one Storyline.
type storylineCheck struct {
	Rows     int      `json:"rows"`
	Problems []string `json:"problems"`
}

// checkStorylineJS opens a Storyline in the page (as a link does), waits
// for its first step's detail, checks it, selects the last step with G and
// checks that. It reports what is wrong, not a pass.
const checkStorylineJS = `async (path) => {
  const problems = [];
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const until = async (what, cond, ms = 20000) => {
    const t0 = performance.now();
    for (;;) {
      try { if (cond()) return true; } catch (e) { /* not there yet */ }
      if (performance.now() - t0 > ms) {
        const d = document.querySelector('#step-detail');
        problems.push('timed out waiting for ' + what + (d ? ': the detail shows ' + JSON.stringify(d.textContent.slice(0, 300)) : ''));
        return false;
      }
      await sleep(15);
    }
  };
  window.__pc.errors = [];
  history.pushState(null, '', path);
  dispatchEvent(new PopStateEvent('popstate'));
  const rows = () => document.querySelector('#timeline') && document.querySelector('#timeline').dataset.rows;
  if (!await until('the step count', () => rows() != null || document.querySelector('#view .error-box'))) return { rows: -1, problems };
  const err = document.querySelector('#view .error-box');
  if (err) return { rows: -1, problems: ['error: ' + err.textContent] };
  const n = +rows();
  const detail = () => document.querySelector('#step-detail');
  const overlaps = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  const check = (i) => {
    const d = detail();
    if (!d.querySelector('h2')) problems.push('step ' + i + ': the detail has no heading');
    if (!d.querySelector('.body, .call, .empty-note')) problems.push('step ' + i + ': the detail shows nothing: ' + JSON.stringify(d.textContent.slice(0, 200)));
    d.querySelectorAll('.call').forEach((c, k) => {
      if (!c.querySelector('pre[data-field=result], .orphan-note')) problems.push('step ' + i + ': tool call ' + k + ' shows neither its result nor the orphan note');
    });
    const tl = document.querySelector('#timeline').getBoundingClientRect(), dr = d.getBoundingClientRect();
    if (tl.width < 200 || dr.width < 200) problems.push('step ' + i + ': a column is squeezed: timeline ' + tl.width + ' px, detail ' + dr.width + ' px');
    if (overlaps(tl, dr)) problems.push('step ' + i + ': the timeline and the detail overlap');
    if (dr.right > innerWidth + 0.5) problems.push('step ' + i + ': the detail ends past the window (' + dr.right + ' > ' + innerWidth + ')');
    if (d.scrollWidth > d.clientWidth + 1) problems.push('step ' + i + ': the detail scrolls sideways (' + d.scrollWidth + ' > ' + d.clientWidth + ')');
    const head = document.querySelector('.story-head');
    if (head.scrollWidth > head.clientWidth + 1) problems.push('the header scrolls sideways (' + head.scrollWidth + ' > ' + head.clientWidth + ')');
    if (document.scrollingElement.scrollWidth > innerWidth + 1) problems.push('the page scrolls sideways');
    const cards = [...document.querySelectorAll('.story-head .card')].map((c) => c.getBoundingClientRect());
    for (let x = 0; x < cards.length; x++) for (let y = x + 1; y < cards.length; y++) if (overlaps(cards[x], cards[y])) problems.push('header cards ' + x + ' and ' + y + ' overlap');
  };
  if (n === 0) {
    if (!detail().textContent.trim()) problems.push('a Storyline without steps shows an empty detail');
  } else {
    if (await until('step 0', () => detail().dataset.step === '0' && !detail().textContent.startsWith('Loading'))) check(0);
    document.body.dispatchEvent(new KeyboardEvent('keydown', { key: 'G', bubbles: true }));
    const last = String(n - 1);
    if (await until('the last step ' + last, () => detail().dataset.step === last && !detail().textContent.startsWith('Loading'))) check(n - 1);
  }
  await sleep(0);
  for (const e of window.__pc.errors) problems.push('uncaught: ' + e);
  return { rows: n, problems };
}`

// listRuns pages through every run of dataset, in the server's order.
func listRuns(t *testing.T, base, dataset string) []sampleRun {
	t.Helper()
	var all []sampleRun
	cursor := ""
	for {
		q := url.Values{"dataset": {dataset}, "limit": {"1000"}, "sort": {"_file_"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		res, err := http.Get(base + "/api/runs?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Runs       []sampleRun `json:"runs"`
			NextCursor string      `json:"next_cursor"`
		}
		err = json.NewDecoder(res.Body).Decode(&page)
		res.Body.Close()
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("GET /api/runs: %d %v", res.StatusCode, err)
		}
		all = append(all, page.Runs...)
		if page.NextCursor == "" {
			return all
		}
		cursor = page.NextCursor
	}
}

// consoleWatch collects the console errors and uncaught exceptions of a
// tab, as DevTools reports them.
type consoleWatch struct {
	mu   sync.Mutex
	msgs []string
}

func watchConsole(t *testing.T, ctx context.Context) *consoleWatch {
	t.Helper()
	w := &consoleWatch{}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				w.mu.Lock()
				w.msgs = append(w.msgs, fmt.Sprintf("%s %s (%s:%d)", m.Type, m.Text, m.URL, m.Line))
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// take returns the messages so far and forgets them.
func (w *consoleWatch) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.msgs
	w.msgs = nil
	return m
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// checkNoOverlap fails when the cells of a row (the children of each
// element rowSel matches, then of each extra one) overlap or stick out of it.
func checkNoOverlap(t *testing.T, p *page, rowSels ...string) {
	t.Helper()
	var bad []string
	p.eval(`(() => { const bad = [];
		const ov = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
		for (const sel of `+jsonString(strings.Join(rowSels, ","))+`.split(',')) for (const row of document.querySelectorAll(sel)) {
			if (!row.offsetParent) continue;
			const r = row.getBoundingClientRect();
			const cells = [...row.children].filter(c => c.offsetParent).map(c => c.getBoundingClientRect());
			cells.forEach((c, i) => {
				if (c.right > r.right + 0.5 || c.left < r.left - 0.5) bad.push(sel + ': cell ' + i + ' sticks out of its row');
				for (let j = i + 1; j < cells.length; j++) if (ov(c, cells[j])) bad.push(sel + ': cells ' + i + ' and ' + j + ' overlap');
			});
		}
		return bad.slice(0, 20); })()`, &bad)
	if len(bad) > 0 {
		p.shot("overlap-" + safe(t.Name()))
		t.Errorf("overlapping boxes:\n  %s", strings.Join(bad, "\n  "))
	}
}
