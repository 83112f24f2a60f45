// Grid paging and what a page asks the SFU for (pure: src/ui/paging.ts), and
// connection quality judged from inbound stats (src/ui/quality.ts).

import { describe, expect, it } from 'vitest';
import type { ConferenceStats, InboundStats } from '../src/protocol';
import { clampPage, MAX_PINS, pageRequest, pageSize, paginate, restoreRequest } from '../src/ui/paging';
import { judge, QualityMeter } from '../src/ui/quality';

const ids = (n: number, from = 1) => Array.from({ length: n }, (_, i) => `p${String(i + from).padStart(2, '0')}`);

describe('pageSize', () => {
  it.each([
    [1248, 640, 9], // 3x3
    [1000, 600, 9],
    [1900, 900, 16], // 4x4 at most (the pin limit)
    [651, 372, 2], // 2 columns of 320 with the gap need 652: 1 column, 2 rows
    [652, 371, 2], // 2 rows of 180 need 372: 2 columns, 1 row
    [652, 372, 4],
    [300, 100, 1], // never less than one
    [0, 0, 1],
  ])('%d x %d holds %d tiles', (w, h, n) => {
    expect(pageSize(w, h)).toBe(n);
  });
});

describe('paginate', () => {
  it('gives page 1 one slot less (the local tile) and keeps the order', () => {
    expect(paginate(ids(11), 9)).toEqual([ids(8), ids(3, 9)]);
    expect(paginate(ids(8), 9)).toEqual([ids(8)]);
    expect(paginate(ids(9), 9)).toEqual([ids(8), ['p09']]);
  });

  it('has one empty page when alone', () => {
    expect(paginate([], 9)).toEqual([[]]);
  });

  it('holds no more remote tiles a page than the room forwards, nor than pins allow', () => {
    expect(paginate(ids(11), 9, 4)).toEqual([ids(4), ids(4, 5), ids(3, 9)]);
    expect(paginate(ids(11), 9, -1)).toEqual([ids(8), ids(3, 9)]); // unlimited
    expect(paginate(ids(11), 9, 0)).toEqual([ids(8), ids(3, 9)]); // no video at all: paged by size
    expect(paginate(ids(40), 25).map((p) => p.length)).toEqual([MAX_PINS, MAX_PINS, 8]);
  });

  it('still pages a one-tile area', () => {
    expect(paginate(ids(2), 1)).toEqual([['p01'], ['p02']]);
  });

  it('clamps a page to the pages there are', () => {
    expect(clampPage(3, 2)).toBe(1);
    expect(clampPage(-1, 2)).toBe(0);
    expect(clampPage(0, 0)).toBe(0);
  });
});

describe('pageRequest', () => {
  it('pins the page, unpins the rest and sets N to the page size', () => {
    expect(pageRequest(['b', 'c'], ['a', 'b', 'x'])).toEqual({ pin: ['c'], unpin: ['a', 'x'], lastN: 2 });
    expect(pageRequest(ids(3, 9), ids(8))).toEqual({ pin: ids(3, 9), unpin: ids(8), lastN: 3 });
    expect(pageRequest([], ['a'])).toEqual({ pin: [], unpin: ['a'], lastN: 0 });
    expect(pageRequest(['a'], ['a'])).toEqual({ pin: [], unpin: [], lastN: 1 });
  });

  it('restores the user pins in their order, without those who left, and their N', () => {
    const present = (id: string) => id !== 'gone';
    expect(restoreRequest(['p1', 'p2'], ['u1', 'gone'], present, 4)).toEqual({ pin: ['u1'], unpin: ['p1', 'p2'], lastN: 4 });
    // the common prefix stays; after it, everything is redone so the order is the user's
    expect(restoreRequest(['u1', 'p2', 'u2'], ['u1', 'u2'], present, null)).toEqual({ pin: ['u2'], unpin: ['p2', 'u2'], lastN: -1 });
    expect(restoreRequest(['u1'], ['u1'], present, null)).toEqual({ pin: [], unpin: [], lastN: -1 });
  });
});

function row(over: Partial<InboundStats>): InboundStats {
  return {
    participantId: 'pB',
    kind: 'video',
    trackId: 'video-pB',
    packetsReceived: 0,
    bytesReceived: 0,
    framesDecoded: 0,
    frameWidth: 320,
    frameHeight: 180,
    framesPerSecond: 30,
    freezeCount: 0,
    pliCount: 0,
    nackCount: 0,
    jitter: 0,
    packetsLost: 0,
    ...over,
  };
}

describe('connection quality', () => {
  const t0 = [row({}), row({ kind: 'audio', trackId: 'audio-pB' })];
  // 2 s later: 200 video + 100 audio packets, 250 kb/s of video
  const t1 = (over: Partial<InboundStats> = {}, audio: Partial<InboundStats> = {}) => [
    row({ packetsReceived: 200, bytesReceived: 62_500, framesDecoded: 60, ...over }),
    row({ kind: 'audio', trackId: 'audio-pB', packetsReceived: 100, ...audio }),
  ];

  it('is good with video arriving and no loss', () => {
    expect(judge(t0, t1(), 2, true)).toEqual({ level: 'good', reasons: [] });
  });

  it('is fair from 2 % loss and poor from 10 % (audio and video together)', () => {
    expect(judge(t0, t1({ packetsLost: 7 }), 2, true)).toEqual({ level: 'fair', reasons: ['2 % packet loss'] });
    expect(judge(t0, t1({ packetsLost: 20 }, { packetsLost: 20 }), 2, true).level).toBe('poor');
  });

  it('is poor when the video froze or does not arrive, fair at a low frame rate', () => {
    expect(judge(t0, t1({ freezeCount: 1 }), 2, true)).toEqual({ level: 'poor', reasons: ['video froze'] });
    // where the browser reports frozen time, a short freeze (a layer switch) is not poor
    const f0 = [row({ totalFreezesDuration: 1 }), t0[1] as InboundStats];
    expect(judge(f0, t1({ freezeCount: 1, totalFreezesDuration: 1.2 }), 2, true).level).toBe('good');
    expect(judge(f0, t1({ freezeCount: 1, totalFreezesDuration: 1.5 }), 2, true).level).toBe('poor');
    expect(judge(t0, t1({ bytesReceived: 400 }), 2, true)).toEqual({ level: 'poor', reasons: ['video not arriving'] });
    expect(judge(t0, t1({ framesDecoded: 0 }), 2, true)).toEqual({ level: 'poor', reasons: ['video not arriving'] });
    // a still, flat picture is little data but still arriving
    expect(judge(t0, t1({ bytesReceived: 2_000 }), 2, true).level).toBe('good');
    expect(judge(t0, t1({ framesPerSecond: 8 }), 2, true)).toEqual({ level: 'fair', reasons: ['8 frames/s'] });
  });

  it('does not expect video that is not forwarded', () => {
    expect(judge(t0, t1({ bytesReceived: 0 }), 2, false).level).toBe('good');
  });

  it('compares with the newest sample at least 2 s old', () => {
    const meter = new QualityMeter();
    const at = (timestamp: number, packetsReceived: number, packetsLost: number): ConferenceStats => ({
      timestamp,
      inbound: [row({ packetsReceived, packetsLost, bytesReceived: packetsReceived * 300, framesDecoded: packetsReceived })],
      outbound: [],
      uplinkEstimate: 0,
    });
    const yes = () => true;
    expect(meter.observe(at(0, 0, 0), yes).size).toBe(0); // nothing to compare with yet
    expect(meter.observe(at(1000, 100, 50), yes).get('pB')?.level).toBe('poor'); // a third lost
    expect(meter.observe(at(2000, 200, 50), yes).get('pB')?.level).toBe('poor'); // still against t=0
    // at 3 s the window is 1 s…3 s: 200 received, none lost
    expect(meter.observe(at(3000, 300, 50), yes).get('pB')).toEqual({ level: 'good', reasons: [] });
  });

  it('judges video only once it was expected over the whole window', () => {
    const meter = new QualityMeter();
    const at = (timestamp: number, bytesReceived: number): ConferenceStats => ({
      timestamp,
      inbound: [row({ packetsReceived: timestamp / 10, bytesReceived })],
      outbound: [],
      uplinkEstimate: 0,
    });
    meter.observe(at(0, 0), () => false); // off the page: not expected
    // on the page since a moment: nothing arrived yet, but it was not expected at the window's start
    expect(meter.observe(at(1000, 0), () => true).get('pB')?.level).toBe('good');
    expect(meter.observe(at(2000, 0), () => true).get('pB')?.level).toBe('good');
    // expected over the whole window (1 s…3 s) and still nothing: poor
    expect(meter.observe(at(3000, 0), () => true).get('pB')).toEqual({ level: 'poor', reasons: ['video not arriving'] });
  });
});
