// The "how many videos" control: a select that calls Conference.setLastN.

import type { Conference } from '../protocol';
import { h } from './dom';
import type { Layouts } from './grid';

/** The choices offered; -1 is "all" (as many as the room allows). */
export const LAST_N_CHOICES = [1, 2, 3, 4, 6, 8, 12, -1] as const;

export function lastNLabel(n: number): string {
  return n < 0 ? 'All' : String(n);
}

/**
 * `label.last-n > select[name=last-n]`; follows the room's limit from `room`
 * events. In grid view (`layouts`) the page decides our N: the select is
 * disabled and says so, and shows the user's choice again after.
 */
export function lastNControl(conference: Conference, layouts?: Pick<Layouts, 'layout' | 'onLayoutChange'>): HTMLLabelElement {
  const select = h('select', { attrs: { name: 'last-n', 'aria-label': 'Most videos to receive' } });
  for (const n of LAST_N_CHOICES) {
    select.append(h('option', { text: lastNLabel(n), attrs: { value: String(n) } }));
  }
  const grid = () => layouts?.layout === 'grid';
  const sync = () => {
    if (grid()) return;
    const wanted = conference.lastN ?? -1;
    if ((LAST_N_CHOICES as readonly number[]).includes(wanted)) select.value = String(wanted);
  };
  sync();
  select.addEventListener('change', () => {
    const n = Number(select.value);
    if (Number.isInteger(n)) conference.setLastN(n);
  });
  const hint = h('span', { class: 'hint' });
  const label = h('label', { class: 'last-n' }, h('span', { text: 'Videos' }), select, hint);
  const render = () => {
    select.disabled = grid();
    if (grid()) {
      hint.textContent = 'set by the grid page';
      label.title = 'In grid view the page shown decides which videos you receive';
      return;
    }
    const room = conference.roomSettings?.lastN;
    const roomCap = room !== undefined && room >= 0 ? room : null;
    hint.textContent = roomCap === null ? '' : `room max ${roomCap}`;
    label.title =
      roomCap === null
        ? 'Most participant videos to receive (the others show their name)'
        : `Most participant videos to receive; this room allows ${roomCap}`;
  };
  conference.on('room', render);
  layouts?.onLayoutChange(() => {
    render();
    sync();
  });
  // setLastN may also be called through the library (window.podium): follow it.
  conference.on('forwarded', sync);
  render();
  return label;
}
