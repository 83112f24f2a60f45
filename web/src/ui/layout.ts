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
