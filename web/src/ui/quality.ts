// Connection quality of each remote participant, judged from the receiver's
// own inbound stats over the last couple of seconds: packet loss, freezes, and
// whether the video we expect is arriving at all. Pure: the stats carry their
// timestamp.

import type { ConferenceStats, InboundStats } from '../protocol';

export type QualityLevel = 'good' | 'fair' | 'poor';

export interface Quality {
  level: QualityLevel;
  /** Why it is not good (empty when good), for the tile's title. */
  reasons: string[];
}

/** Loss at or above these fractions makes a connection fair / poor. */
export const FAIR_LOSS = 0.02;
export const POOR_LOSS = 0.1;
/** A video we expect below this rate is not arriving (b/s): a still, flat picture still takes more. */
export const STALLED_BITRATE = 2_000;
/** Frozen this long within the window (s) makes a connection poor; a layer switch's hiccup does not. */
export const POOR_FREEZE_S = 0.5;
/** A playing video below this frame rate is fair at best. */
export const FAIR_FPS = 12;
/** Stats are compared with the sample this far back (ms), so one late packet does not flip the badge. */
export const WINDOW_MS = 2000;

interface Sample {
  at: number;
  rows: Map<string, InboundStats[]>;
  /** Participants whose video was expected then. */
  expected: Set<string>;
}

/** Judges a participant from its rows now and WINDOW_MS ago. `expectsVideo`: forwarded, not suspended, camera on. */
export function judge(before: InboundStats[], now: InboundStats[], seconds: number, expectsVideo: boolean): Quality {
  const reasons: string[] = [];
  let level: QualityLevel = 'good';
  const worse = (l: QualityLevel, why: string) => {
    reasons.push(why);
    if (l === 'poor' || level === 'good') level = l;
  };
  const prev = (row: InboundStats) => before.find((b) => b.kind === row.kind && b.trackId === row.trackId);
  let received = 0;
  let lost = 0;
  for (const row of now) {
    const b = prev(row);
    if (!b) continue;
    received += Math.max(0, row.packetsReceived - b.packetsReceived);
    lost += Math.max(0, row.packetsLost - b.packetsLost);
  }
  const loss = received + lost > 0 ? lost / (received + lost) : 0;
  if (loss >= POOR_LOSS) worse('poor', `${Math.round(loss * 100)} % packet loss`);
  else if (loss >= FAIR_LOSS) worse('fair', `${Math.round(loss * 100)} % packet loss`);

  const video = now.find((r) => r.kind === 'video');
  const vb = video ? prev(video) : undefined;
  if (expectsVideo && video && vb && seconds > 0) {
    const bitrate = ((video.bytesReceived - vb.bytesReceived) * 8) / seconds;
    // Frozen time where the browser reports it, else the freeze count.
    const froze =
      video.totalFreezesDuration !== undefined && vb.totalFreezesDuration !== undefined
        ? video.totalFreezesDuration - vb.totalFreezesDuration >= POOR_FREEZE_S
        : video.freezeCount > vb.freezeCount;
    if (bitrate < STALLED_BITRATE || video.framesDecoded === vb.framesDecoded) worse('poor', 'video not arriving');
    else if (froze) worse('poor', 'video froze');
    else if (video.framesPerSecond > 0 && video.framesPerSecond < FAIR_FPS) {
      worse('fair', `${Math.round(video.framesPerSecond)} frames/s`);
    }
  }
  return { level, reasons };
}

/**
 * Keeps the recent stats samples and judges every participant against the
 * oldest sample at least WINDOW_MS old (until there is one: the oldest kept).
 */
export class QualityMeter {
  private samples: Sample[] = [];

  /** Adds a sample; returns the judgement per participant with rows in both samples. */
  observe(stats: ConferenceStats, expectsVideo: (id: string) => boolean): Map<string, Quality> {
    const rows = new Map<string, InboundStats[]>();
    for (const r of stats.inbound) {
      const list = rows.get(r.participantId) ?? [];
      list.push(r);
      rows.set(r.participantId, list);
    }
    const now: Sample = { at: stats.timestamp, rows, expected: new Set([...rows.keys()].filter(expectsVideo)) };
    // Keep the newest sample at least WINDOW_MS old and everything after it.
    let base = 0;
    for (let i = 0; i < this.samples.length; i++) {
      if (now.at - (this.samples[i]?.at ?? 0) >= WINDOW_MS) base = i;
    }
    this.samples = this.samples.slice(base);
    const then = this.samples[0];
    this.samples.push(now);
    const out = new Map<string, Quality>();
    if (!then || now.at <= then.at) return out;
    const seconds = (now.at - then.at) / 1000;
    for (const [id, list] of rows) {
      const before = then.rows.get(id);
      // Video is judged once it was expected over the whole window (not just after a page turn).
      if (before) out.set(id, judge(before, list, seconds, now.expected.has(id) && then.expected.has(id)));
    }
    return out;
  }
}

/** The latest audio level of each participant (0…1, from inbound audio stats), when the browser reports one. */
export function audioLevels(stats: ConferenceStats): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of stats.inbound) {
    if (r.kind === 'audio' && r.audioLevel !== undefined) out.set(r.participantId, r.audioLevel);
  }
  return out;
}
