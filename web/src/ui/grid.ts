// Grid view: every participant in tiles of equal size, a page at a time when
// they do not all fit (the page size follows the window), with previous/next
// buttons and PageUp/PageDown. The Gallery owns the tiles and decides what to
// ask the SFU for; this places them and keeps the page. Also the layout
// switch (a button and the G key), kept for the call.

import { h, icon, icons } from './dom';
import { bestGrid } from './layout';
import { clampPage, pageSize, paginate } from './paging';

export type LayoutMode = 'speaker' | 'grid';

const GAP = 12;

export class GridView {
  /** `div.grid`: `.grid-tiles` (the page) and `nav.grid-nav`; hidden in speaker view. */
  readonly el: HTMLDivElement;
  /** The tiles of the page shown. */
  readonly tilesEl: HTMLDivElement;
  /** Tiles of other pages: kept in the document (hidden) so their audio plays on. */
  private readonly offPage: HTMLDivElement;
  private readonly nav: HTMLElement;
  private readonly prevBtn: HTMLButtonElement;
  private readonly nextBtn: HTMLButtonElement;
  private readonly label: HTMLSpanElement;
  private page = 0;
  private pages: string[][] = [[]];

  constructor(
    private readonly measure: (el: HTMLElement) => { width: number; height: number },
    /** Called when the user changes the page. */
    private readonly onPage: () => void,
  ) {
    this.tilesEl = h('div', { class: 'grid-tiles' });
    this.offPage = h('div', { class: 'grid-offpage' });
    this.offPage.hidden = true;
    this.prevBtn = h('button', { class: 'page-prev', attrs: { type: 'button', 'aria-label': 'Previous page', title: 'Previous page (Page Up)', 'aria-keyshortcuts': 'PageUp' } }, icon(icons.prev));
    this.nextBtn = h('button', { class: 'page-next', attrs: { type: 'button', 'aria-label': 'Next page', title: 'Next page (Page Down)', 'aria-keyshortcuts': 'PageDown' } }, icon(icons.next));
    this.label = h('span', { class: 'page-label', attrs: { 'aria-live': 'polite' } });
    this.prevBtn.addEventListener('click', () => this.go(this.page - 1));
    this.nextBtn.addEventListener('click', () => this.go(this.page + 1));
    this.nav = h('nav', { class: 'grid-nav', attrs: { 'aria-label': 'Grid pages' } }, this.prevBtn, this.label, this.nextBtn);
    this.el = h('div', { class: 'grid', attrs: { role: 'region', 'aria-label': 'Participants, grid view' } }, this.tilesEl, this.nav, this.offPage);
    this.el.hidden = true;
  }

  /** The page shown (0-based) and how many there are. */
  get position(): { page: number; pages: number } {
    return { page: this.page, pages: this.pages.length };
  }

  /** Shows page `page` (clamped); returns whether it changed. */
  go(page: number): boolean {
    const next = clampPage(page, this.pages.length);
    if (next === this.page) return false;
    this.page = next;
    this.onPage();
    return true;
  }

  /**
   * Pages the remote participants (in order) at the size the tiles area has
   * now, at most `cap` a page, and shows the current page: the local tile
   * first on page 1. Returns the ids on the page shown, and whether any tile moved.
   */
  layout(local: HTMLElement, remote: ReadonlyMap<string, HTMLElement>, cap: number | null): { ids: string[]; moved: boolean } {
    const area = this.measure(this.tilesEl);
    const perPage = pageSize(area.width, area.height, GAP);
    this.pages = paginate([...remote.keys()], perPage, cap);
    this.page = clampPage(this.page, this.pages.length);
    const ids = this.pages[this.page] ?? [];
    const shown = [...(this.page === 0 ? [local] : []), ...ids.flatMap((id) => remote.get(id) ?? [])];
    const hidden = [local, ...remote.values()].filter((el) => !shown.includes(el));
    const g = bestGrid(shown.length, area.width, area.height, 16 / 9, GAP);
    this.tilesEl.style.setProperty('--cols', String(g.cols));
    if (g.tileWidth > 0) this.tilesEl.style.setProperty('--tile-w', `${g.tileWidth}px`);
    // Off-page tiles first: moved out of the page before it is filled, never detached.
    const movedOff = place(this.offPage, hidden);
    const moved = place(this.tilesEl, shown) || movedOff;

    const { page, pages } = this.position;
    // Hidden, not removed, with one page: the tiles area keeps its size, so the page size does not flip.
    this.nav.classList.toggle('single', pages < 2);
    this.prevBtn.disabled = page === 0;
    this.nextBtn.disabled = page >= pages - 1;
    this.label.textContent = `Page ${page + 1} of ${pages}`;
    this.label.dataset['page'] = String(page + 1);
    this.label.dataset['pages'] = String(pages);
    this.el.setAttribute('aria-label', pages > 1 ? `Participants, grid view, page ${page + 1} of ${pages}` : 'Participants, grid view');
    return { ids: [...ids], moved };
  }

  /** Hands every tile back (speaker view takes them). */
  clear(): void {
    this.tilesEl.replaceChildren();
    this.offPage.replaceChildren();
  }
}

/** What the layout switch needs of the Gallery. */
export interface Layouts {
  readonly layout: LayoutMode;
  setLayout(mode: LayoutMode): void;
  onLayoutChange(cb: (mode: LayoutMode) => void): void;
  /** Grid view: go to the previous (-1) or next (+1) page. */
  turnPage(step: number): void;
}

/**
 * `button.ctl.layout`, switching speaker and grid view (aria-pressed = grid).
 * Also installs the keyboard shortcuts: G switches, PageUp/PageDown turn grid
 * pages (not while typing in a field).
 */
export function layoutControl(layouts: Layouts, target: EventTarget = document): HTMLButtonElement {
  const btn = h('button', { class: 'ctl layout', attrs: { type: 'button', 'aria-keyshortcuts': 'G' } });
  const render = () => {
    const grid = layouts.layout === 'grid';
    btn.replaceChildren(icon(grid ? icons.speaker : icons.grid), h('span', { text: grid ? 'Speaker view' : 'Grid view' }));
    btn.setAttribute('aria-pressed', String(grid));
    btn.setAttribute('aria-label', 'Grid view');
    btn.title = grid ? 'Switch to speaker view (G)' : 'Switch to grid view (G)';
  };
  btn.addEventListener('click', () => layouts.setLayout(layouts.layout === 'grid' ? 'speaker' : 'grid'));
  layouts.onLayoutChange(render);
  render();
  target.addEventListener('keydown', (e) => {
    const ev = e as KeyboardEvent;
    if (ev.defaultPrevented || ev.ctrlKey || ev.metaKey || ev.altKey || typing(ev.target)) return;
    if (ev.key === 'g' || ev.key === 'G') {
      layouts.setLayout(layouts.layout === 'grid' ? 'speaker' : 'grid');
    } else if (layouts.layout === 'grid' && (ev.key === 'PageDown' || ev.key === 'PageUp')) {
      layouts.turnPage(ev.key === 'PageDown' ? 1 : -1);
    } else {
      return;
    }
    ev.preventDefault();
  });
  return btn;
}

function typing(t: EventTarget | null): boolean {
  if (!(t instanceof HTMLElement)) return false;
  return t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName);
}

/** Makes `els` the children of `parent`, in order, moving as little as possible. Returns whether anything moved. */
export function place(parent: HTMLElement, els: HTMLElement[]): boolean {
  let moved = false;
  els.forEach((el, i) => {
    if (parent.children[i] !== el) {
      parent.insertBefore(el, parent.children[i] ?? null);
      moved = true;
    }
  });
  while (parent.children.length > els.length) {
    const last = parent.lastElementChild;
    if (!last) break;
    // Tiles that left the container were moved elsewhere (or destroyed).
    last.remove();
    moved = true;
  }
  return moved;
}
