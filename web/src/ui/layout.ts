// Grid layout: the column count that makes tiles of a fixed aspect ratio as
// large as possible inside the stage.

export interface Grid {
  cols: number;
  rows: number;
  tileWidth: number;
  tileHeight: number;
}

export function bestGrid(n: number, width: number, height: number, aspect = 16 / 9, gap = 12): Grid {
  const count = Math.max(1, n);
  let best: Grid = { cols: 1, rows: count, tileWidth: 0, tileHeight: 0 };
  for (let cols = 1; cols <= count; cols++) {
    const rows = Math.ceil(count / cols);
    const w = (width - gap * (cols - 1)) / cols;
    const h = (height - gap * (rows - 1)) / rows;
    if (w <= 0 || h <= 0) continue;
    const tileWidth = Math.min(w, h * aspect);
    if (tileWidth > best.tileWidth) {
      best = { cols, rows, tileWidth: Math.floor(tileWidth), tileHeight: Math.floor(tileWidth / aspect) };
    }
  }
  return best;
}

export interface StageInput {
  /** The remote participant on stage so far, if any. */
  previous: string | null;
  /** The dominant speaker (may be ourselves), null when nobody / unknown. */
  speaker: string | null;
  /** Our own participant id. */
  self: string | null;
  /** Remote participants present, in join order. */
  present: readonly string[];
  /** Whose video we receive, in priority order; null when unknown. */
  forwarded: readonly string[] | null;
  /** Our pins, oldest first. */
  pinned?: readonly string[];
  /** The participant the user put on stage (clicked; pinned too); null when none. */
  staged?: string | null;
  /** The room's on-stage set (a screen share while it lasts). */
  onStage?: readonly string[];
}

/**
 * The remote participant to show large. A pin beats the dominant speaker: the
 * participant the user put on stage, else the most recently pinned one whose
 * video we receive, else the most recently pinned one. Without pins, whom the
 * room put on stage (a screen share) and whose video we receive; then,
 * preferably someone whose video we receive: the dominant speaker; when that
 * is ourselves, nobody or someone not present, the previous occupant; failing
 * that the first forwarded participant. Only when none of those has video: the
 * speaker, the previous occupant, the first present participant (as a name
 * tile). null means nobody else is here (the local tile takes the stage).
 */
export function chooseStage(i: StageInput): string | null {
  const here = (id: string | null | undefined): id is string =>
    id !== null && id !== undefined && id !== i.self && i.present.includes(id);
  const video = (id: string) => i.forwarded === null || i.forwarded.includes(id);
  if (here(i.staged)) return i.staged;
  const pins = (i.pinned ?? []).filter(here).reverse();
  const pinWithVideo = pins.find(video);
  if (pinWithVideo !== undefined) return pinWithVideo;
  if (pins[0] !== undefined) return pins[0];
  const roomStage = (i.onStage ?? []).find((id) => here(id) && video(id));
  if (roomStage !== undefined) return roomStage;
  if (here(i.speaker) && video(i.speaker)) return i.speaker;
  if (here(i.previous) && video(i.previous)) return i.previous;
  const firstForwarded = i.forwarded?.find((id) => here(id));
  if (firstForwarded !== undefined) return firstForwarded;
  if (here(i.speaker)) return i.speaker;
  if (here(i.previous)) return i.previous;
  return i.present.find((id) => here(id)) ?? null;
}
