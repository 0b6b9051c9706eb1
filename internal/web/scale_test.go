package web_test

import (
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pchronicle/pchronicle/internal/model"
)

// Goals of the Explorer at scale (docs/performance.md, "Web Explorer"),
// measured in the browser.
const (
	firstStepsGoal = time.Second            // a 100,000-step Storyline's first steps after navigation
	longTaskGoal   = 200 * time.Millisecond // no long task while scrolling it to the end
	runsPageGoal   = 300 * time.Millisecond // a page of a 100,000-run list
)

// TestExplorerAtScale opens a 100,000-step Storyline and pages a list of
// 100,000 runs in Chromium, and checks the timings the browser measures.
func TestExplorerAtScale(t *testing.T) {
	needChromium(t)
	if testing.Short() {
		t.Skip("writes 200,000 steps and 100,000 runs")
	}
	dir := t.TempDir()
	start := time.Now()
	const steps, runs = 100_000, 100_000
	writeStore(t, filepath.Join(dir, "long.store"), func(add func(*model.Storyline)) { add(longStoryline("long.json", "long", steps)) })
	writeStore(t, filepath.Join(dir, "many.store"), func(add func(*model.Storyline)) { manyRuns(add, "many.json", runs) })
	t.Logf("wrote the stores in %v", time.Since(start).Round(time.Millisecond))
	s := serve(t, dir)
	p := &page{t: t, ctx: browser(t, 1366, 820), url: s.url}

	// Warm the server the way a reader's first click would (the Snapshot is
	// built; the first query of a source resolves it); the timing below is
	// a later navigation, as when a reader opens a second Storyline.
	p.open(storylinePath("dataset", "long.store", "long"))
	p.until("first open", `document.querySelector('main').dataset.firstRowsMs`)

	p.open(storylinePath("dataset", "long.store", "long"))
	p.until("first steps", `document.querySelector('main').dataset.firstRowsMs && !document.querySelector('#step-row-0').textContent.includes('loading')`)
	var first float64
	p.eval(`performance.getEntriesByName('pchronicle:storyline-first-rows')[0].startTime`, &first)
	firstSteps := time.Duration(first * float64(time.Millisecond))
	t.Logf("100,000-step Storyline: first steps %v after navigation start", firstSteps.Round(time.Millisecond))
	p.shot("scale-storyline-start")

	// Scroll to the end the way a wheel does: 200 scroll events, one per
	// frame, each drawing its rows; then wait for the last rows' data.
	var scrollStart float64
	p.eval(`performance.now()`, &scrollStart)
	var scrolled float64
	p.eval(`(async () => {
		const v = '`+webVersion(t, p)+`';
		const m = await import('/assets/' + v + '/js/vlist.js');
		const draw = m.VirtualList.prototype.draw;
		window.__drawMs = []; 
		m.VirtualList.prototype.draw = function () { const t = performance.now(); draw.call(this); window.__drawMs.push(performance.now() - t); };
		const sc = document.querySelector('#timeline');
		const t0 = performance.now();
		const n = 200, step = (sc.scrollHeight - sc.clientHeight) / n;
		for (let i = 1; i <= n; i++) {
			sc.scrollTop = Math.round(i * step);
			await new Promise(r => { requestAnimationFrame(r); setTimeout(r, 100); });
		}
		sc.scrollTop = sc.scrollHeight;
		return performance.now() - t0;
	})()`, &scrolled)
	var spacer float64
	p.eval(`document.querySelector('#timeline .vspacer').offsetHeight`, &spacer)
	if spacer > 4_000_000 {
		t.Errorf("the timeline's spacer is %.0f px: 100,000 rows must take the scaled path", spacer)
	}
	p.until("the last step's row", `document.querySelector('#step-row-99999') && !document.querySelector('#step-row-99999').textContent.includes('loading')`)
	// The long tasks from the first scroll event to the last row's data.
	var tasks []float64
	p.eval(`window.__pc.longTasks.filter(e => e.start >= `+fmt.Sprint(scrollStart)+`).map(e => e.duration)`, &tasks)
	sort.Float64s(tasks)
	longest := 0.0
	if len(tasks) > 0 {
		longest = tasks[len(tasks)-1]
	}
	var draws []float64
	p.eval(`window.__drawMs`, &draws)
	sort.Float64s(draws)
	if len(draws) > 0 {
		t.Logf("draw: %d calls, median %.1f ms, max %.1f ms", len(draws), draws[len(draws)/2], draws[len(draws)-1])
	}
	t.Logf("scrolled 100,000 steps to the end in %.0f ms (200 frames); %d long tasks over 50 ms meanwhile, the longest %.0f ms", scrolled, len(tasks), longest)
	p.shot("scale-storyline-end")

	// G selects the last step; find goes to the server.
	run(t, p.ctx, "G", js(`document.activeElement.blur()`), chromedp.KeyEvent("G"))
	p.until("the last step's detail", `document.querySelector('#step-detail').dataset.step === '99999'`)
	run(t, p.ctx, "find", chromedp.SendKeys(chromedp.CSS("#find"), "item 99997"), js(`document.querySelector("#find").form.requestSubmit()`))
	p.until("found", `document.querySelector('#find-status').textContent === '1 of 2 steps'`)

	// The run list: the first page, then keyset pages with Next.
	p.open("/runs")
	p.until("runs", `document.querySelector('#runs-ms') && document.querySelector('.pager[role=status]').textContent.includes('of 100,001')`)
	var pages []time.Duration
	for i := 0; i < 6; i++ {
		var ms string
		p.eval(`document.querySelector('#runs-ms').textContent.match(/in (\d+) ms/)[1]`, &ms)
		var n int
		fmt.Sscan(ms, &n)
		pages = append(pages, time.Duration(n)*time.Millisecond)
		want := fmt.Sprintf("runs %s–", commas(i*50+51))
		p.clickX("//button[contains(., 'Next')]")
		p.until("page "+fmt.Sprint(i+2), `document.querySelector('.pager[role=status]').textContent.includes('`+want+`')`)
	}
	t.Logf("100,001-run list: page times %v (the first includes the count)", pages)
	p.shot("scale-runs")

	if firstSteps > firstStepsGoal {
		t.Errorf("first steps of a 100,000-step Storyline after %v, goal %v", firstSteps, firstStepsGoal)
	}
	if time.Duration(longest*float64(time.Millisecond)) > longTaskGoal {
		t.Errorf("a long task of %.0f ms (goal: none over %v); all: %v", longest, longTaskGoal, tasks)
	}
	for i, d := range pages[1:] { // later pages: what a reader waits for while paging
		if d > runsPageGoal {
			t.Errorf("runs page %d took %v, goal %v", i+2, d, runsPageGoal)
		}
	}
}

func commas(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
