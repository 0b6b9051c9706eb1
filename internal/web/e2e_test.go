package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pchronicle/pchronicle/internal/model"
)

// page is one browser tab on a running server, with the checks the tests
// make.
type page struct {
	t   *testing.T
	ctx context.Context
	url string
}

func (p *page) open(path string) {
	p.t.Helper()
	run(p.t, p.ctx, "open "+path, chromedp.Navigate(p.url+path))
}

// until waits for a JavaScript condition to hold.
func (p *page) until(what, js string) {
	p.t.Helper()
	// A condition on an element not there yet throws: that is "not yet".
	js = "(() => { try { return (" + js + "); } catch (e) { return false; } })()"
	run(p.t, p.ctx, what, void(chromedp.Poll[any](js, chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))))
}

// eval returns the value of a JavaScript expression.
func (p *page) eval(js string, out any) {
	p.t.Helper()
	c, cancel := context.WithTimeout(p.ctx, 2*time.Minute)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[json.RawMessage](js, chromedp.EvalAwaitPromise))
	if err == nil {
		err = json.Unmarshal(v, out)
	}
	if err != nil {
		p.t.Fatalf("evaluate %s: %v", js, err)
	}
}

// void drops an action's value.
func void[T any](a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := a(ctx, t)
		return chromedp.Void{}, err
	}
}

// js runs a script for its effect.
func js(expr string) chromedp.Action[chromedp.Void] { return void(chromedp.Evaluate[any](expr)) }

func (p *page) str(js string) string {
	p.t.Helper()
	var s string
	p.eval(js, &s)
	return s
}

func (p *page) click(sel string) {
	p.t.Helper()
	run(p.t, p.ctx, "click "+sel, chromedp.Click(chromedp.CSS(sel)))
}

// clickX clicks the element an XPath names.
func (p *page) clickX(xpath string) {
	p.t.Helper()
	run(p.t, p.ctx, "click "+xpath, chromedp.Click(chromedp.Search(xpath)))
}

func (p *page) location() string { return p.str("location.pathname + location.search") }

func (p *page) shot(name string) { shot(p.t, p.ctx, name) }

func storylinePath(dataset, file, session string, extra ...string) string {
	q := url.Values{"dataset": {dataset}, "file": {file}, "session_id": {session}}
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	return "/storyline?" + q.Encode()
}

// TestExplorer drives every view of the Explorer in Chromium against a
// real `pchronicle serve` of two Datasets: the bundled examples (plus a
// hostile and a multi-agent trajectory) and a store of 50 generated runs.
func TestExplorer(t *testing.T) {
	needChromium(t)
	ex := exampleDataset(t)
	more := filepath.Join(t.TempDir(), "more")
	writeStore(t, filepath.Join(more, "runs.store"), func(add func(*model.Storyline)) { manyRuns(add, "generated.json", 50) })
	s := serve(t, "ex="+ex, "more="+more)
	p := &page{t: t, ctx: browser(t, 1366, 820), url: s.url}

	t.Run("catalog", func(t *testing.T) {
		p.t = t
		p.open("/")
		p.until("two Datasets listed", `document.querySelectorAll('section.dataset').length === 2`)
		p.until("sources of ex listed", `[...document.querySelectorAll('section.dataset')].some(s => s.querySelectorAll('tbody tr').length === 8)`)
		p.shot("catalog")
		// Selecting a Dataset narrows the view and goes into the URL.
		run(t, p.ctx, "select Dataset more", chromedp.SetValue(chromedp.CSS("#dataset-select"), "more"),
			js(`document.querySelector('#dataset-select').dispatchEvent(new Event('change'))`))
		p.until("only Dataset more", `location.search.includes('dataset=more') && document.querySelectorAll('section.dataset').length === 1`)
	})

	t.Run("runs filter and keyset paging", func(t *testing.T) {
		p.t = t
		p.open("/runs?dataset=more&limit=25")
		p.until("first page", `document.querySelector('#runs-table') && document.querySelector('.pager[role=status]').textContent.includes('runs 1–25 of 50')`)
		first := p.str(`document.querySelector('#runs-table tbody tr a.open').textContent`)
		p.clickX("//button[contains(., 'Next')]")
		p.until("second page", `document.querySelector('.pager[role=status]').textContent.includes('runs 26–50 of 50')`)
		second := p.str(`document.querySelector('#runs-table tbody tr a.open').textContent`)
		if first == second {
			t.Fatalf("page 2 starts with the same run as page 1: %q", first)
		}
		if !strings.Contains(p.location(), "cursor=") {
			t.Fatalf("the page cursor is not in the URL: %s", p.location())
		}
		// A reload lands on the same page.
		run(t, p.ctx, "reload", chromedp.Reload())
		p.until("second page after reload", `document.querySelector('#runs-table') && document.querySelector('.pager[role=status]').textContent.includes('runs 26–50 of 50')`)
		p.clickX("//button[contains(., 'Previous')]")
		p.until("back on page 1", `document.querySelector('.pager[role=status]').textContent.includes('runs 1–25 of 50')`)
		if got := p.str(`document.querySelector('#runs-table tbody tr a.open').textContent`); got != first {
			t.Fatalf("Previous shows %q first, want %q", got, first)
		}
		// Server-side filters: agent and status, and the sort.
		p.open("/runs?dataset=more&agent=alpha&status=completed&sort=-session_id")
		p.until("filtered", `document.querySelector('#runs-table') && document.querySelector('.pager[role=status]').textContent.includes('of 5')`)
		sessions := p.str(`[...document.querySelectorAll('#runs-table tbody tr a.open')].map(a => a.textContent.split(' ').pop()).join(',')`)
		if sessions != "run-000048,run-000036,run-000024,run-000012,run-000000" {
			t.Fatalf("agent=alpha status=completed sorted by -session_id: %s", sessions)
		}
		// A time range, in UTC.
		p.open("/runs?dataset=more&since=2026-01-01T00:30:00Z&until=2026-01-01T00:40:00Z")
		p.until("ten minutes of runs", `document.querySelector('#runs-table') && document.querySelector('.pager[role=status]').textContent.includes('of 10') &&
			document.querySelector('input[name=since]').value.startsWith('2026-01-01T00:30')`)
		p.shot("runs")
	})

	t.Run("storyline tool call to its result", func(t *testing.T) {
		p.t = t
		p.open(storylinePath("ex", "openai/support-chats.jsonl", "line-1"))
		p.until("rows loaded", `(document.querySelector('#step-row-2') || {}).textContent?.includes('lookup_order')`)
		p.click("#step-row-2")
		p.until("detail of step 2", `document.querySelector('#step-detail').dataset.step === '2' && document.querySelector('.goto-result')`)
		p.click(".goto-result")
		p.until("detail of the result step", `document.querySelector('#step-detail').dataset.step === '3'`)
		if d := p.str(`document.querySelector('#step-detail').textContent`); !strings.Contains(d, "result of lookup_order") || !strings.Contains(d, `"shipped"`) {
			t.Fatalf("result step detail: %s", d)
		}
		if !strings.Contains(p.location(), "step=3") {
			t.Fatalf("the selected step is not in the URL: %s", p.location())
		}
		p.click(".goto-call")
		p.until("back at the call", `document.querySelector('#step-detail').dataset.step === '2'`)
		p.shot("storyline")
	})

	t.Run("big payloads and downloads", func(t *testing.T) {
		p.t = t
		p.open(storylinePath("ex", "big/payload.trajectory.json", "payload", "step", "0"))
		p.until("a preview with the true size", `document.querySelector('#step-detail').dataset.step === '0' &&
			document.querySelector('#step-detail .size-note').textContent.startsWith('showing the first 20,000 characters of 293 KB')`)
		if n := p.str(`String(document.querySelector('#step-detail [data-field=message]').textContent.length)`); n != "20000" {
			t.Fatalf("preview of %s characters", n)
		}
		// Download fetches the whole body as text, Load all shows it.
		var got struct {
			Status int    `json:"status"`
			Size   int    `json:"size"`
			Disp   string `json:"disp"`
		}
		p.eval(`fetch(document.querySelector('#step-detail .size-note a').href).then(async r => ({status: r.status, size: (await r.text()).length, disp: r.headers.get('Content-Disposition')}))`, &got)
		if got.Status != 200 || got.Size != len(payloadMessage) || !strings.Contains(got.Disp, "attachment") {
			t.Fatalf("download of the message: %+v", got)
		}
		p.clickX("//button[text()='Load all']")
		p.until("the whole message", `document.querySelector('#step-detail [data-field=message]').textContent.length === `+fmt.Sprint(len(payloadMessage))+` &&
			document.querySelector('#step-detail [data-field=message]').textContent.endsWith('THE-END')`)
		// The Storyline downloads in each export format.
		for _, as := range []string{"atif", "openai", "canonical"} {
			p.eval(`fetch([...document.querySelectorAll('a.download')].find(a => a.href.includes('as=`+as+`')).href).then(async r => ({status: r.status, size: (await r.text()).length, disp: r.headers.get('Content-Disposition')}))`, &got)
			if got.Status != 200 || got.Size < len(payloadMessage) || !strings.Contains(got.Disp, "attachment; filename=\"payload.") {
				t.Fatalf("download as %s: %+v", as, got)
			}
		}
		p.shot("storyline-payload")
	})

	t.Run("subagent link", func(t *testing.T) {
		p.t = t
		p.open(storylinePath("ex", "team/team.trajectory.json", "team-run"))
		p.until("agents with totals", `document.querySelectorAll('#agents tbody tr').length === 2 && document.querySelector('#agents tfoot').textContent.includes('total')`)
		// The call that started the worker links to it.
		p.click("#step-row-1")
		p.until("the call's subagent link", `document.querySelector('#step-detail').dataset.step === '1' && document.querySelector('#step-detail .call a.subagent-link[href*="worker-1"]')`)
		p.click("#story-links a[href*='worker-1']")
		p.until("the subagent's Storyline", `decodeURIComponent(location.search).includes('session_id=team-run/worker-1') && document.querySelector('h1').textContent.includes('worker')`)
		p.until("its parent link", `[...document.querySelectorAll('#story-links a')].some(a => a.textContent === 'team-run')`)
		p.shot("storyline-subagent")
	})

	t.Run("continuation link", func(t *testing.T) {
		p.t = t
		p.open(storylinePath("ex", "cont/part1.trajectory.json", "cont-run"))
		p.until("the link", `[...document.querySelectorAll('#story-links a')].some(a => a.textContent === 'part2.trajectory.json')`)
		p.clickX("//div[@id='story-links']//a[.='part2.trajectory.json']")
		p.until("the next segment", `decodeURIComponent(location.search).includes('file=cont/part2.trajectory.json') &&
			(document.querySelector('#step-row-0') || {}).textContent?.includes('segment 2')`)
	})

	t.Run("find in storyline", func(t *testing.T) {
		p.t = t
		p.open(storylinePath("ex", "atif/fix-failing-test.trajectory.json", "example-fix-failing-test"))
		p.until("timeline", `document.querySelector('#step-row-0') && !document.querySelector('#step-row-0').textContent.includes('loading')`)
		run(t, p.ctx, "find pytest", chromedp.SendKeys(chromedp.CSS("#find"), "pytest"), js(`document.querySelector("#find").form.requestSubmit()`))
		p.until("hits", `/^1 of \d+ steps$/.test(document.querySelector('#find-status').textContent)`)
		p.until("the first hit shown", `document.querySelector('#step-detail').dataset.step === new URLSearchParams(location.search).get('step')`)
		firstHit := p.str(`document.querySelector('#step-detail').dataset.step`)
		run(t, p.ctx, "press n", js(`document.activeElement.blur()`), chromedp.KeyEvent("n"))
		p.until("next hit", `document.querySelector('#find-status').textContent.startsWith('2 of') &&
			document.querySelector('#step-detail').dataset.step === new URLSearchParams(location.search).get('step') &&
			document.querySelector('#step-detail').dataset.step !== '`+firstHit+`'`)
		if !strings.Contains(p.location(), "find=pytest") {
			t.Fatalf("find is not in the URL: %s", p.location())
		}
		p.until("hit marked in the detail", `document.querySelector('#step-detail mark') && document.querySelector('#step-detail mark').textContent === 'pytest'`)
	})

	t.Run("hostile content renders as text", func(t *testing.T) {
		p.t = t
		p.open(storylinePath("ex", "hostile/"+hostileFile, hostileSession, "step", "1"))
		p.until("detail of step 1", `document.querySelector('#step-detail').dataset.step === '1' && document.querySelector('#step-detail .call')`)
		run(t, p.ctx, "open the reasoning", js(`document.querySelector('#step-detail details.reasoning').open = true`))
		p.click("#step-row-0")
		p.until("detail of step 0", `document.querySelector('#step-detail').dataset.step === '0'`)
		if d := p.str(`document.querySelector('#step-detail').textContent`); !strings.Contains(d, `<script>window.__pwned='message'</script>`) {
			t.Fatalf("the message is not shown as text: %s", d)
		}
		p.shot("hostile-storyline")
		checkNothingRan(t, p)
		p.open("/runs?dataset=ex&q=hostile")
		p.until("the hostile run listed", `document.querySelectorAll('#runs-table tbody tr').length === 1`)
		p.open("/search?dataset=ex&q=__pwned")
		p.until("hits", `document.querySelectorAll('#hits li').length > 3`)
		p.shot("hostile-search")
		checkNothingRan(t, p)
	})

	t.Run("compare two runs", func(t *testing.T) {
		p.t = t
		// Side A from a Storyline's "compare with…", side B ticked in Runs.
		p.open(storylinePath("ex", "openai/support-chats.jsonl", "line-1"))
		p.click("#compare-with")
		p.until("runs with one pick", `document.querySelector('#runs-table') && document.querySelector('.pager').textContent.includes('1 picked for Compare')`)
		p.click(`#runs-table input[type=checkbox][value='["ex","openai/support-chats.jsonl","line-2"]']`)
		p.click("#compare-picked")
		p.until("aligned", `document.querySelector('#compare-counts')`)
		counts := p.str(`document.querySelector('#compare-counts').textContent`)
		if !strings.Contains(counts, "same") || !strings.Contains(counts, "first divergence") {
			t.Fatalf("compare counts: %s", counts)
		}
		// line-1 and line-2 share the system prompt; their user turns differ.
		if got := p.str(`[...document.querySelectorAll('#compare-rows .cmp-row:not(.head)')].slice(0, 2).map(r => r.className).join(',')`); got != "cmp-row same,cmp-row changed" {
			t.Fatalf("first rows: %s", got)
		}
		if !strings.Contains(p.location(), "a_session_id=line-") || !strings.Contains(p.location(), "b_session_id=line-") {
			t.Fatalf("the compare pair is not in the URL: %s", p.location())
		}
		// The changed row shows its words that differ; the detail of the
		// selected row (the first divergence) too.
		p.until("the difference of the first divergence", `document.querySelector('#compare-detail').dataset.row === '1' && document.querySelector('#compare-detail ins, #compare-detail del')`)
		if got := p.str(`String(document.querySelectorAll('#compare-rows .cmp-row.changed ins, #compare-rows .cmp-row.changed del').length > 0)`); got != "true" {
			t.Fatalf("a changed row marks no word")
		}
		// Next change skips the rows that are the same; "changed only" hides them.
		p.click("#next-change")
		p.until("the next change", `(r => r && !r.classList.contains('same') && r.dataset.row !== '1')(document.querySelector('#compare-rows .cmp-row[aria-selected=true]'))`)
		p.click("#changed-only")
		p.until("only changes shown", `[...document.querySelectorAll('#compare-rows .cmp-row.same')].every(r => r.offsetParent === null)`)
		checkNoOverlap(t, p, "#compare-rows .cmp-row", "#compare-sides")
		p.shot("compare")
		p.click("#changed-only")
	})

	t.Run("search to step", func(t *testing.T) {
		p.t = t
		p.open("/search?dataset=ex&q=strptime")
		p.until("hits", `document.querySelectorAll('#hits li').length >= 1`)
		p.click("#hits li a.hit-link")
		p.until("the step of the hit", `location.pathname === '/storyline' && document.querySelector('#step-detail').dataset.step === '3'`)
		p.shot("search-hit")
	})

	t.Run("sql console", func(t *testing.T) {
		p.t = t
		p.open("/sql?dataset=ex")
		p.until("editor", `document.querySelector('#sql-editor')`)
		run(t, p.ctx, "type SQL and press Ctrl+Enter",
			chromedp.SetValue(chromedp.CSS("#sql-editor"), "SELECT _file_, session_id, step_count FROM ex.runs ORDER BY _file_, session_id"),
			chromedp.Focus(chromedp.CSS("#sql-editor")),
			chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
		p.until("11 rows with links", `document.querySelectorAll('#sql-result tbody tr').length === 11 && document.querySelectorAll('#sql-result a.open').length === 11`)
		if !strings.Contains(p.str(`document.querySelector('#sql-report summary').textContent`), "read 8 of 8 sources") {
			t.Fatalf("pruning report: %s", p.str(`document.querySelector('#sql-report').textContent`))
		}
		p.shot("sql")
		// The downloads are made from blobs the page fetched: nothing the
		// policy forbids.
		var csv string
		p.eval(`import('/assets/`+webVersion(t, p)+`/js/api.js').then(m => m.blob('POST', '/api/query', {sql: 'SELECT 1 AS one', format: 'csv'})).then(b => b.text())`, &csv)
		if csv != "one\n1\n" {
			t.Fatalf("CSV download: %q", csv)
		}
		p.clickX("//button[text()='Download CSV']")
		p.clickX("//button[text()='Download JSON']")
		checkNothingRan(t, p)
		p.click("#sql-result a.open")
		p.until("a Storyline from a row", `location.pathname === '/storyline' && location.search.includes('dataset=ex')`)

		p.open("/sql?dataset=ex&max_rows=100&sql=" + url.QueryEscape("SELECT unnest(range(1000)) AS n"))
		p.until("truncated", `document.querySelector('#sql-truncated') && document.querySelectorAll('#sql-result tbody tr').length === 100`)

		p.open("/sql?dataset=ex&sql=" + url.QueryEscape("DROP TABLE runs"))
		p.until("rejected", `(document.querySelector('.error-box') || {}).textContent?.startsWith('query_rejected')`)
		p.open("/sql?dataset=ex&sql=" + url.QueryEscape("SELECT _file_,\n  nope FROM ex.runs"))
		p.until("error with its position", `(document.querySelector('#sql-error-pos') || {}).textContent === 'at line 2, column 3'`)
		if sel := p.str(`(e => e.value.slice(e.selectionStart, e.selectionStart + 4))(document.querySelector('#sql-editor'))`); sel != "nope" {
			t.Fatalf("the editor's caret is at %q, want the start of nope", sel)
		}
		p.shot("sql-error")
		// The schema browser lists the relations with their column types;
		// completion offers the columns of the relations named.
		p.open("/sql?dataset=ex")
		p.until("the schema", `[...document.querySelectorAll('#sql-schema .schema-rel')].some(r => r.dataset.relation === 'runs' && r.textContent.includes('step_count') && r.textContent.includes('bigint') &&
			r.textContent.includes('One row per Storyline') && r.textContent.includes('Run grouping key'))`)
		run(t, p.ctx, "type a prefix", js(`(e => { e.value = ' FROM ex.runs'; e.focus(); e.setSelectionRange(0, 0); })(document.querySelector('#sql-editor'))`),
			chromedp.KeyEvent("SELECT tool_c"))
		p.until("a completion", `!document.querySelector('#sql-suggest').hidden && document.querySelector('#sql-suggest').textContent.includes('tool_call_count')`)
		run(t, p.ctx, "Tab", chromedp.KeyEvent("	"))
		p.until("completed", `document.querySelector('#sql-editor').value.startsWith('SELECT tool_call')`)
		p.shot("sql-completion")
		// DuckDB shows a long line cut around the error: the caret still
		// lands on the column it names.
		long := "SELECT _file_, session_id, agent_name, agent_model_name, step_count, tool_call_count, prompt_tokens, completion_tokens, cost_usd, nope FROM ex.runs"
		p.open("/sql?dataset=ex&sql=" + url.QueryEscape(long))
		p.until("error with its position", `(document.querySelector('#sql-error-pos') || {}).textContent === 'at line 1, column `+fmt.Sprint(strings.Index(long, "nope")+1)+`'`)
		if sel := p.str(`(e => e.value.slice(e.selectionStart, e.selectionStart + 4))(document.querySelector('#sql-editor'))`); sel != "nope" {
			t.Fatalf("the editor's caret is at %q, want the start of nope", sel)
		}
	})

	t.Run("keyboard", func(t *testing.T) {
		p.t = t
		p.open("/runs?dataset=ex&sort=_file_")
		p.until("runs", `document.querySelectorAll('#runs-table tbody tr').length === 11`)
		run(t, p.ctx, "j j j Enter", chromedp.KeyEvent("j"), chromedp.KeyEvent("j"), chromedp.KeyEvent("j"), chromedp.KeyEvent("\r"))
		p.until("third run opened", `location.pathname === '/storyline' && location.search.includes('codex')`)
		p.until("its timeline", `document.querySelector('#step-row-0') && !document.querySelector('#step-row-0').textContent.includes('loading')`)
		run(t, p.ctx, "?", chromedp.KeyEvent("?"))
		p.until("help", `!document.querySelector('#help').hidden`)
		run(t, p.ctx, "Esc", chromedp.KeyEvent("\x1b"))
		p.until("help closed", `document.querySelector('#help').hidden`)
		run(t, p.ctx, "G", chromedp.KeyEvent("G"))
		p.until("last step", `document.querySelector('#step-detail').dataset.step === '6'`)
		run(t, p.ctx, "g g", chromedp.KeyEvent("g"), chromedp.KeyEvent("g"))
		p.until("first step", `document.querySelector('#step-detail').dataset.step === '0'`)
	})

	t.Run("dark theme", func(t *testing.T) {
		p.t = t
		p.open("/runs?dataset=ex")
		p.click("#theme-toggle")
		p.until("dark", `document.documentElement.dataset.theme === 'dark' && getComputedStyle(document.body).backgroundColor === 'rgb(17, 20, 24)'`)
		p.until("runs listed in the dark theme", `document.querySelectorAll('#runs-table tbody tr').length > 0`)
		p.shot("runs-dark")
		p.open(storylinePath("ex", "atif/fix-failing-test.trajectory.json", "example-fix-failing-test", "step", "2"))
		p.until("dark storyline", `document.documentElement.dataset.theme === 'dark' && document.querySelector('#step-detail').dataset.step === '2'`)
		p.shot("storyline-dark")
		p.click("#theme-toggle") // light
		p.click("#theme-toggle") // system
	})

	t.Run("settings keys are sent", func(t *testing.T) {
		p.t = t
		p.open("/settings")
		run(t, p.ctx, "save keys", chromedp.SetValue(chromedp.CSS("#access-key"), "AK1"), chromedp.SetValue(chromedp.CSS("#secret-key"), "SK1"),
			js(`document.querySelector("#access-key").form.requestSubmit()`))
		p.until("stored", `localStorage.getItem('pchronicle.catalog.access_key') === 'AK1' && localStorage.getItem('pchronicle.catalog.secret_key') === 'SK1'`)
		// The page's requests carry them; a server without a Directory ignores them.
		var sent map[string]string
		p.eval(`import('/assets/`+webVersion(t, p)+`/js/api.js').then(m => m.authHeaders())`, &sent)
		if sent["X-Catalog-Access-Key"] != "AK1" || sent["X-Catalog-Secret-Key"] != "SK1" {
			t.Fatalf("key headers: %v", sent)
		}
		p.open("/runs?dataset=ex")
		p.until("still browsable with keys", `document.querySelectorAll('#runs-table tbody tr').length === 11`)
		p.open("/settings")
		p.click("#clear-keys")
		p.until("forgotten", `localStorage.getItem('pchronicle.catalog.access_key') === null`)
	})

	t.Run("refresh after a file is added", func(t *testing.T) {
		p.t = t
		p.open("/?dataset=ex")
		p.until("catalog", `document.querySelector('#refresh') && document.querySelector('section.dataset dd').textContent === '8'`)
		before := p.str(`document.querySelector('#snapshot-badge').textContent`)
		copyExample(t, ex, "added/one.trajectory.json")
		p.click("#refresh")
		p.until("the new source", `document.querySelector('section.dataset dd') && document.querySelector('section.dataset dd').textContent === '9'`)
		if after := p.str(`document.querySelector('#snapshot-badge').textContent`); after == before {
			t.Fatalf("the snapshot badge still says %s", after)
		}
		// Another client's refresh: the page says so and keeps its data.
		copyExample(t, ex, "added/two.trajectory.json")
		if code := s.post(t, "/api/catalog"); code != 200 {
			t.Fatalf("POST /api/catalog: %d", code)
		}
		p.until("new snapshot notice", `!document.querySelector('#notice').hidden && document.querySelector('#notice').textContent.includes('A new snapshot is available')`)
		if got := p.str(`document.querySelector('section.dataset dd').textContent`); got != "9" {
			t.Fatalf("the page switched data under the reader: %s sources", got)
		}
		p.shot("catalog-new-snapshot")
		p.click("#notice button")
		p.until("switched", `document.querySelector('section.dataset dd').textContent === '10' && document.querySelector('#notice').hidden`)
	})

	checkNothingRan(t, p)
}

// webVersion is the asset version of the page's current document.
func webVersion(t *testing.T, p *page) string {
	src := p.str(`document.querySelector('script[type=module]').getAttribute('src')`)
	parts := strings.Split(src, "/")
	if len(parts) < 3 {
		t.Fatalf("module script %q", src)
	}
	return parts[2]
}

func copyExample(t *testing.T, dataset, rel string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataset, "atif", "fix-failing-test.trajectory.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFile(filepath.Join(dataset, rel), b); err != nil {
		t.Fatal(err)
	}
}

// checkNothingRan fails when trajectory text ran script, made elements, or
// the page broke its CSP.
func checkNothingRan(t *testing.T, p *page) {
	t.Helper()
	var state struct {
		Pwned      any      `json:"pwned"`
		Elements   int      `json:"elements"`
		Violations []string `json:"violations"`
	}
	p.eval(`({pwned: window.__pwned === undefined ? null : String(window.__pwned),
		elements: document.querySelectorAll('#view img, #view script, #view iframe, #view svg, #view style, #view b, [href^="javascript:" i], [src^="javascript:" i], a[href^="data:" i]').length,
		violations: window.__pc.violations})`, &state)
	if state.Pwned != nil || state.Elements != 0 || len(state.Violations) != 0 {
		b, _ := json.Marshal(state)
		t.Fatalf("hostile content was not inert: %s", b)
	}
}
