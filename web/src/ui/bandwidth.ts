// Bandwidth adaptation on the conference page: the SFU's downlink estimate in
// the top bar, and the record of `stats` messages kept for the test hooks.

import type { BandwidthStats, Conference } from '../protocol';
import { h } from './dom';

/** Bits per second as "2.4 Mb/s", "850 kb/s" or "900 b/s". */
export function formatBitrate(bps: number): string {
  // Compared after rounding: 999.6 kb/s reads "1.0 Mb/s", not "1000 kb/s".
  if (Math.round(bps / 1e3) >= 1000) return `${(bps / 1e6).toFixed(1)} Mb/s`;
  if (Math.round(bps) >= 1000) return `${Math.round(bps / 1e3)} kb/s`;
  return `${Math.round(bps)} b/s`;
}

/**
 * `.bandwidth`: "↓ 2.4 Mb/s", the SFU's estimate of our downlink, with the
 * allocation and switch count in its tooltip. Hidden until an estimate exists.
 */
export function bandwidthIndicator(conference: Conference): HTMLSpanElement {
  const el = h('span', { class: 'bandwidth' });
  const render = (stats: BandwidthStats | null) => {
    el.hidden = stats === null || stats.estimate <= 0;
    if (!stats || el.hidden) {
      el.textContent = '';
      el.title = '';
      return;
    }
    el.textContent = `↓ ${formatBitrate(stats.estimate)}`;
    el.title =
      `Downlink estimated by the server: ${formatBitrate(stats.estimate)}; ` +
      `in use: ${formatBitrate(stats.allocated)}; ` +
      `layer switches for bandwidth: ${stats.switches}`;
  };
  conference.on('bandwidth', ({ stats }) => render(stats));
  render(conference.bandwidth);
  return el;
}

/** One `stats` message as received, with the client time `at` (Date.now(), ms). */
export interface BandwidthLogEntry extends BandwidthStats {
  at: number;
}

/** The default number of entries a BandwidthLog keeps (10 minutes at one a second). */
export const BANDWIDTH_LOG_SIZE = 600;

/** The last `size` `stats` messages of a conference, across reconnects, oldest first. */
export class BandwidthLog {
  private readonly entries: BandwidthLogEntry[] = [];

  constructor(
    conference: Conference,
    private readonly now: () => number = Date.now,
    private readonly size: number = BANDWIDTH_LOG_SIZE,
  ) {
    conference.on('bandwidth', ({ stats }) => {
      if (stats) this.add(stats);
    });
  }

  private add(stats: BandwidthStats): void {
    this.entries.push({ at: this.now(), ...stats });
    if (this.entries.length > this.size) this.entries.splice(0, this.entries.length - this.size);
  }

  /** Copies of the entries, oldest first. */
  list(): BandwidthLogEntry[] {
    return this.entries.map((e) => ({
      ...e,
      videos: Object.fromEntries(Object.entries(e.videos).map(([id, v]) => [id, { ...v }])),
    }));
  }
}
