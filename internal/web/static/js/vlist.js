// VirtualList shows n fixed-height rows while creating only the visible
// ones. Browsers cap an element's height (Chromium near 33.5 million px,
// Firefox near 17.9 million, older engines far less), so past MAX_SPACER
// the scroll range is scaled: the scroll position maps linearly onto the
// virtual one, and the rows themselves are drawn at their true height in a
// sticky window. 4 million px is 62,500 rows of 64 px: every list longer
// than that takes the scaled path, which the 100,000-step browser test
// exercises.

const MAX_SPACER = 4_000_000;

export class VirtualList {
  // renderRow(i, el) fills the row element of index i (el is reused).
  constructor(container, { rowHeight, count, renderRow, onRange }) {
    this.rowHeight = rowHeight;
    this.n = count;
    this.renderRow = renderRow;
    this.onRange = onRange;
    this.scroller = container;
    container.classList.add('vscroll');
    container.setAttribute('role', 'listbox');
    this.spacer = document.createElement('div');
    this.spacer.className = 'vspacer';
    this.window = document.createElement('div');
    this.window.className = 'vwindow';
    this.spacer.appendChild(this.window);
    container.appendChild(this.spacer);
    this.rows = new Map(); // index → element
    this.pool = [];
    this.onScroll = () => this.schedule();
    container.addEventListener('scroll', this.onScroll, { passive: true });
    this.resize = new ResizeObserver(() => { this.layout(); this.draw(); });
    this.resize.observe(container);
    this.layout();
  }

  get virtualHeight() { return this.n * this.rowHeight; }

  layout() {
    this.viewH = this.scroller.clientHeight;
    this.spacerH = Math.min(this.virtualHeight, MAX_SPACER);
    this.spacer.style.height = Math.max(this.spacerH, this.viewH) + 'px';
    this.window.style.height = this.viewH + 'px';
  }

  setCount(n) {
    if (n === this.n) return;
    this.n = n;
    this.layout();
    this.draw();
  }

  // position is the virtual pixel offset of the viewport's top.
  position() {
    const range = this.spacerH - this.viewH;
    const vrange = this.virtualHeight - this.viewH;
    if (range <= 0 || vrange <= 0) return 0;
    return Math.min(vrange, Math.max(0, this.scroller.scrollTop * (vrange / range)));
  }

  scrollToPosition(pos) {
    const range = this.spacerH - this.viewH;
    const vrange = this.virtualHeight - this.viewH;
    if (range <= 0 || vrange <= 0) { this.scroller.scrollTop = 0; this.draw(); return; }
    this.scroller.scrollTop = Math.round(Math.min(vrange, Math.max(0, pos)) * (range / vrange));
    this.draw();
  }

  // scrollIntoView brings row i into view, nearest edge (or centered).
  scrollIntoView(i, center = false) {
    const top = i * this.rowHeight, pos = this.position();
    if (center) this.scrollToPosition(top - (this.viewH - this.rowHeight) / 2);
    else if (top < pos) this.scrollToPosition(top);
    else if (top + this.rowHeight > pos + this.viewH) this.scrollToPosition(top + this.rowHeight - this.viewH);
    else this.draw();
  }

  schedule() {
    if (this.pending) return;
    this.pending = requestAnimationFrame(() => { this.pending = 0; this.draw(); });
  }

  visibleRange() {
    const pos = this.position();
    const first = Math.floor(pos / this.rowHeight);
    const last = Math.min(this.n - 1, Math.floor((pos + this.viewH) / this.rowHeight));
    return [first, last, pos];
  }

  draw() {
    const [first, last, pos] = this.visibleRange();
    for (const [i, el] of this.rows) {
      if (i < first || i > last) { this.rows.delete(i); el.remove(); this.pool.push(el); }
    }
    for (let i = first; i <= last; i++) {
      let el = this.rows.get(i);
      if (!el) {
        el = this.pool.pop() || document.createElement('div');
        el.className = 'vrow';
        el.setAttribute('role', 'option');
        // Only the visible rows exist: their place in the whole is told.
        el.setAttribute('aria-setsize', String(this.n));
        el.setAttribute('aria-posinset', String(i + 1));
        this.rows.set(i, el);
        this.window.appendChild(el);
        this.renderRow(i, el);
      }
      el.style.transform = `translateY(${Math.round(i * this.rowHeight - pos)}px)`;
    }
    if (this.onRange) this.onRange(first, last);
  }

  // refresh renders the rows in [from, to] again (their data arrived).
  refresh(from, to) {
    for (const [i, el] of this.rows) if (i >= from && i <= to) this.renderRow(i, el);
  }

  destroy() {
    this.resize.disconnect();
    this.scroller.removeEventListener('scroll', this.onScroll);
    if (this.pending) cancelAnimationFrame(this.pending);
  }
}
