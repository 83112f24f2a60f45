// Tiny DOM helpers; the page uses no framework.

type Child = Node | string | null | undefined | false;

export interface Props {
  class?: string;
  text?: string;
  attrs?: Record<string, string>;
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (props.class) el.className = props.class;
  if (props.text !== undefined) el.textContent = props.text;
  for (const [k, v] of Object.entries(props.attrs ?? {})) el.setAttribute(k, v);
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c);
  }
  return el;
}

/** An inline SVG icon from a static markup string. */
export function icon(svg: string): HTMLSpanElement {
  const span = document.createElement('span');
  span.className = 'icon';
  span.setAttribute('aria-hidden', 'true');
  span.innerHTML = svg;
  return span;
}

const SVG = (body: string) =>
  `<svg viewBox="0 0 24 24" width="20" height="20" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round">${body}</svg>`;

export const icons = {
  mic: SVG(
    '<rect x="9" y="2" width="6" height="12" rx="3"/><path d="M5 10v1a7 7 0 0 0 14 0v-1"/><path d="M12 18v4"/>',
  ),
  micOff: SVG(
    '<path d="M15 9.3V5a3 3 0 0 0-5.7-1.3"/><path d="M9 9v2a3 3 0 0 0 4.8 2.4"/><path d="M19 10v1a7 7 0 0 1-1.1 3.8"/><path d="M5 10v1a7 7 0 0 0 11.2 5.6"/><path d="M12 18v4"/><path d="M3 3l18 18"/>',
  ),
  cam: SVG('<rect x="2" y="6" width="14" height="12" rx="2"/><path d="M16 10l6-4v12l-6-4z"/>'),
  camOff: SVG(
    '<path d="M10.7 6H14a2 2 0 0 1 2 2v3.3l1 1L22 8v10"/><path d="M16 16a2 2 0 0 1-2 2H4a2 2 0 0 1-2-2V8a2 2 0 0 1 2-2h2"/><path d="M3 3l18 18"/>',
  ),
  leave: SVG(
    '<path d="M10 17l-5-5 5-5"/><path d="M5 12h11"/><path d="M14 4h4a2 2 0 0 1 2 2v12a2 2 0 0 1-2 2h-4"/>',
  ),
  pin: SVG('<path d="M9 3h6"/><path d="M10 3v6l-3 4v2h10v-2l-3-4V3"/><path d="M12 15v6"/>'),
  // three bars: the quality badge fills one (poor), two (fair) or all (good) by CSS
  signal: SVG('<path class="bar1" d="M5 20v-4"/><path class="bar2" d="M12 20v-9"/><path class="bar3" d="M19 20V6"/>'),
  grid: SVG('<rect x="3" y="3" width="7" height="7" rx="1"/><rect x="14" y="3" width="7" height="7" rx="1"/><rect x="3" y="14" width="7" height="7" rx="1"/><rect x="14" y="14" width="7" height="7" rx="1"/>'),
  speaker: SVG('<rect x="3" y="3" width="18" height="12" rx="1"/><rect x="3" y="18" width="5" height="3" rx="1"/><rect x="9.5" y="18" width="5" height="3" rx="1"/><rect x="16" y="18" width="5" height="3" rx="1"/>'),
  prev: SVG('<path d="M15 18l-6-6 6-6"/>'),
  next: SVG('<path d="M9 18l6-6-6-6"/>'),
  sound: SVG('<path d="M11 5L6 9H2v6h4l5 4z"/><path d="M15.5 8.5a5 5 0 0 1 0 7"/><path d="M19 5a10 10 0 0 1 0 14"/>'),
};
