// Grid view paging: how many tiles a page holds at the window's size, which
// participants each page shows, and what the client asks the SFU for so that
// Last N forwards exactly the videos of the page shown. Pure: no DOM.

/** Smallest grid tile, CSS px: the SFU's lowest simulcast encoding (320x180). */
export const MIN_TILE_WIDTH = 320;
export const MIN_TILE_HEIGHT = 180;
/** At most 4x4 tiles a page: a client may pin at most 16 participants (docs/protocol.md). */
export const MAX_COLS = 4;
export const MAX_ROWS = 4;
export const MAX_PINS = 16;

/** How many tiles of at least MIN_TILE_WIDTH x MIN_TILE_HEIGHT fit width x height (at least 1). */
export function pageSize(width: number, height: number, gap = 12): number {
  const fit = (space: number, min: number, most: number) =>
    Math.max(1, Math.min(most, Math.floor((Math.max(0, space) + gap) / (min + gap))));
  return fit(width, MIN_TILE_WIDTH, MAX_COLS) * fit(height, MIN_TILE_HEIGHT, MAX_ROWS);
}

/**
 * The pages of remote participants (in the order given). The local tile takes
 * the first slot of page 1, so page 1 holds perPage - 1 of them and the others
 * perPage; no page holds more than `cap` (the room's Last N when > 0: more
 * would not all be forwarded) or MAX_PINS. There is always at least one page
 * (possibly empty: alone in the room).
 */
export function paginate(remote: readonly string[], perPage: number, cap: number | null = null): string[][] {
  const most = Math.min(MAX_PINS, cap !== null && cap > 0 ? cap : Infinity);
  const pages: string[][] = [];
  let i = 0;
  do {
    const slots = Math.max(1, Math.min(most, pages.length === 0 ? perPage - 1 : perPage));
    pages.push(remote.slice(i, i + slots));
    i += slots;
  } while (i < remote.length);
  return pages;
}

/** A page index kept within the pages there are. */
export function clampPage(page: number, pages: number): number {
  return Math.max(0, Math.min(Math.max(0, pages - 1), Math.floor(page)));
}

/** What to tell the SFU so that it forwards exactly the videos of a page. */
export interface PageRequest {
  /** Pins to add, in page order. */
  pin: string[];
  /** Pins to drop: pinned participants not on the page. */
  unpin: string[];
  /** Our Last N: the page's size, so pins fill it and nobody else's video comes. */
  lastN: number;
}

/**
 * The pins and Last N for showing `page`, given our current pins. Pins come
 * first in the SFU's selection and N = the page's size, so the forwarded set
 * is the page: neither the dominant speaker nor the room's on-stage set adds
 * a video the page does not show.
 */
export function pageRequest(page: readonly string[], pinned: readonly string[]): PageRequest {
  const on = new Set(page);
  const have = new Set(pinned);
  return {
    pin: page.filter((id) => !have.has(id)),
    unpin: pinned.filter((id) => !on.has(id)),
    lastN: page.length,
  };
}

/**
 * Back to speaker view: restore the pins (in their order: the latest pin takes
 * the stage) and the Last N the user had before the grid took them over. Pins
 * of participants who left are not restored.
 */
export function restoreRequest(
  pinned: readonly string[],
  saved: readonly string[],
  present: (id: string) => boolean,
  savedLastN: number | null,
): PageRequest {
  const want = saved.filter(present);
  let same = 0;
  while (same < want.length && same < pinned.length && want[same] === pinned[same]) same++;
  return { pin: want.slice(same), unpin: pinned.slice(same), lastN: savedLastN ?? -1 };
}
