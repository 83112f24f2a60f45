// @vitest-environment happy-dom
// Grid view of the conference page, driven by a Conference on the fake
// WebSocket: pages at the tiles area's size, previous/next buttons and
// PageUp/PageDown, the G switch, and what each page asks the SFU for — the
// page's participants pinned, Last N = the page's size, constraints at the
// tiles' size — with the user's pins and N back in speaker view. Also the
// tiles' connection quality and audio level from stats.

import { afterEach, describe, expect, it } from 'vitest';
import { Conference } from '../src/protocol';
import type { Participant } from '../src/protocol/messages';
import { Gallery } from '../src/ui/gallery';
import { layoutControl } from '../src/ui/grid';
import { lastNControl } from '../src/ui/lastn';
import { asStream, FakeClock, FakePeerConnection, FakeStream, FakeTrack, FakeWebSocket, flush } from './fakes';

const people: Participant[] = Array.from({ length: 11 }, (_, i) => {
  const n = String(i + 1).padStart(2, '0');
  return { id: `p${n}`, name: `Synthetic ${n}`, audioMuted: false, videoMuted: false };
});
const ids = (from: number, to: number) => people.slice(from - 1, to).map((p) => p.id);

// The tiles area holds 3x3 tiles of at least 320x180; tiles on the page are
// 320x180 CSS px, tiles of other pages are hidden (0x0).
const measure = (el: HTMLElement) => {
  if (el.classList.contains('grid-tiles')) return { width: 1000, height: 600 };
  if (el.closest('.grid-offpage')) return { width: 0, height: 0 };
  if (el.closest('.grid-tiles')) return { width: 320, height: 180 };
  return el.closest('.spotlight') ? { width: 640, height: 360 } : { width: 192, height: 108 };
};

async function setup() {
  const sockets: FakeWebSocket[] = [];
  const clock = new FakeClock();
  const conference = new Conference({
    room: 'grid',
    name: 'Viewer',
    url: 'ws://test/ws',
    localStream: asStream(new FakeStream('local', [new FakeTrack('audio', 'mic-1'), new FakeTrack('video', 'cam-1')])),
    clock,
    createWebSocket: (url) => {
      const ws = new FakeWebSocket(url);
      sockets.push(ws);
      return ws;
    },
    createPeerConnection: (cfg) => new FakePeerConnection(cfg),
    codecs: () => null,
    logger: { debug: () => {}, warn: () => {} },
  });
  const gallery = new Gallery({ conference, name: 'Viewer', localStream: null, measure, pixelRatio: () => 2, statsIntervalMs: 0 });
  // Shortcuts listen on this test's page only (a document listener would outlive the test).
  const root = document.createElement('div');
  const button = layoutControl(gallery, root);
  const lastN = lastNControl(conference, gallery);
  const input = document.createElement('input');
  root.append(gallery.el, button, lastN, input);
  document.body.replaceChildren(root);
  conference.join();
  const ws = sockets[0];
  if (!ws) throw new Error('no socket');
  ws.open();
  ws.receive({ type: 'welcome', version: 1, id: 'pV', room: 'grid', resume: { id: 'pV', secret: 's' }, participants: people, iceServers: [] });
  await flush();
  const onPage = () =>
    [...document.querySelectorAll<HTMLElement>('.grid-tiles .tile')].map((e) => e.dataset['participantId'] ?? 'local');
  const label = () => document.querySelector<HTMLElement>('.page-label');
  const key = (k: string, target: EventTarget = root) =>
    target.dispatchEvent(new KeyboardEvent('keydown', { key: k, bubbles: true, cancelable: true }));
  const sent = (...types: string[]) => ws.sent.filter((m) => types.includes(String(m['type'])));
  const prev = document.querySelector<HTMLButtonElement>('.page-prev');
  const next = document.querySelector<HTMLButtonElement>('.page-next');
  if (!prev || !next) throw new Error('no page buttons');
  return { conference, gallery, ws, clock, button, lastN, input, onPage, label, key, sent, prev, next };
}

afterEach(() => {
  document.body.replaceChildren();
});

describe('grid view', () => {
  it('shows page 1, then page 2, asking the SFU for exactly the videos on the page', async () => {
    const t = await setup();
    t.conference.pin('p05'); // the user's own pin, from speaker view
    t.conference.setLastN(4);
    t.clock.advance(1000);
    const before = t.ws.sent.length;

    t.button.click();
    expect(t.gallery.layout).toBe('grid');
    expect(document.querySelector('.gallery')?.getAttribute('data-layout')).toBe('grid');
    expect(t.button.getAttribute('aria-pressed')).toBe('true');
    expect(t.onPage()).toEqual(['local', ...ids(1, 8)]); // 3x3, the local tile first
    expect(t.label()?.textContent).toBe('Page 1 of 2');
    const page1 = t.ws.sent.slice(before).filter((m) => m['type'] !== 'constraints');
    expect(page1).toEqual([
      ...ids(1, 8)
        .filter((id) => id !== 'p05')
        .map((id) => ({ type: 'pin', id })),
      { type: 'set-last-n', n: 8 },
    ]);
    expect(new Set(t.conference.pinned)).toEqual(new Set(ids(1, 8)));
    // constraints: the page's tiles at their size in device pixels, as thumbnails
    t.clock.advance(300);
    const thumb = { width: 640, height: 360, role: 'thumbnail' };
    for (const id of ids(1, 8)) expect(t.conference.constraintsSent[id]).toEqual(thumb);
    expect(t.prev.disabled).toBe(true);
    expect(t.next.disabled).toBe(false);
    expect(t.lastN.querySelector('select')?.disabled).toBe(true);

    // PageDown: page 2 holds the other three
    const mark = t.ws.sent.length;
    t.key('PageDown');
    expect(t.onPage()).toEqual(ids(9, 11));
    expect(t.label()?.textContent).toBe('Page 2 of 2');
    expect(t.ws.sent.slice(mark).filter((m) => m['type'] !== 'constraints')).toEqual([
      ...['p05', ...ids(1, 8).filter((id) => id !== 'p05')].map((id) => ({ type: 'unpin', id })), // in pin order
      ...ids(9, 11).map((id) => ({ type: 'pin', id })),
      { type: 'set-last-n', n: 3 },
    ]);
    expect(t.conference.pinned).toEqual(ids(9, 11));
    t.clock.advance(300);
    for (const id of ids(9, 11)) expect(t.conference.constraintsSent[id]).toEqual(thumb);
    expect(t.next.disabled).toBe(true);
    // off-page tiles stay in the document (their audio plays on), hidden
    expect(document.querySelectorAll('.grid-offpage .tile')).toHaveLength(9);
    expect(document.querySelector<HTMLElement>('.grid-offpage')?.hidden).toBe(true);

    // the SFU answers: the page's tiles show video, the others names
    t.ws.receive({ type: 'forwarded', ids: ids(9, 11), lastN: 3 });
    expect(document.querySelectorAll('.grid-tiles .tile.not-forwarded')).toHaveLength(0);
    expect(document.querySelectorAll('.grid-offpage .tile.not-forwarded')).toHaveLength(8); // not the local one
    const requests = t.ws.sent.slice(before).filter((m) => ['pin', 'unpin', 'set-last-n'].includes(String(m['type'])));
    expect(requests.length).toBe(page1.length + 12); // nothing more

    // the previous-page button; G back to speaker view restores the user's pin and N
    t.prev.click();
    expect(t.onPage()).toEqual(['local', ...ids(1, 8)]);
    const back = t.ws.sent.length;
    t.key('g');
    expect(t.gallery.layout).toBe('speaker');
    expect(t.conference.pinned).toEqual(['p05']);
    expect(t.conference.lastN).toBe(4);
    expect(t.ws.sent.slice(back).filter((m) => m['type'] === 'set-last-n')).toEqual([{ type: 'set-last-n', n: 4 }]);
    expect(t.gallery.stage).toBe('p05');
    expect(document.querySelectorAll('.grid .tile')).toHaveLength(0);
    expect(document.querySelectorAll('.spotlight .tile, .strip .tile')).toHaveLength(12);
    expect(t.lastN.querySelector('select')?.disabled).toBe(false);
  });

  it('holds no more remote tiles a page than the room forwards', async () => {
    const t = await setup();
    t.ws.receive({ type: 'room', lastN: 4, onStage: [] });
    t.key('G');
    expect(t.onPage()).toEqual(['local', ...ids(1, 4)]);
    expect(t.label()?.textContent).toBe('Page 1 of 3');
    expect(t.conference.lastN).toBe(4);
    t.next.click();
    t.next.click();
    expect(t.onPage()).toEqual(ids(9, 11));
  });

  it('keeps the page within the pages there are when participants leave', async () => {
    const t = await setup();
    t.key('g');
    t.key('PageDown');
    expect(t.onPage()).toEqual(ids(9, 11));
    for (const id of ids(9, 11)) t.ws.receive({ type: 'participant-left', id });
    expect(t.onPage()).toEqual(['local', ...ids(1, 8)]);
    expect(t.label()?.textContent).toBe('Page 1 of 1');
    expect(document.querySelector('.grid-nav')?.classList.contains('single')).toBe(true);
    expect(t.conference.pinned).toEqual(ids(1, 8));
  });

  it('ignores the shortcuts while typing, and PageDown in speaker view', async () => {
    const t = await setup();
    t.key('PageDown');
    t.key('g', t.input);
    expect(t.gallery.layout).toBe('speaker');
    expect(t.sent('pin', 'set-last-n')).toEqual([]);
  });

  it('shows a clicked grid tile large in speaker view', async () => {
    const t = await setup();
    t.key('g');
    document.querySelector<HTMLElement>('.tile[data-participant-id="p03"]')?.click();
    expect(t.gallery.layout).toBe('speaker');
    expect(t.gallery.stage).toBe('p03');
    expect(t.conference.pinned).toEqual(['p03']);
  });

  it('labels tiles for screen readers and shows quality and audio level from stats', async () => {
    const t = await setup();
    const tile = () => document.querySelector<HTMLElement>('.tile[data-participant-id="p02"]');
    expect(tile()?.getAttribute('aria-label')).toBe('Synthetic 02');
    t.ws.receive({ type: 'speaker', id: 'p02' });
    expect(tile()?.getAttribute('aria-label')).toBe('Synthetic 02, speaking');
    const stats = (timestamp: number, packets: number, lost: number) => ({
      timestamp,
      outbound: [],
      uplinkEstimate: 0,
      inbound: [
        { participantId: 'p02', kind: 'audio' as const, trackId: 'a', packetsReceived: packets, packetsLost: lost, bytesReceived: 0, framesDecoded: 0, frameWidth: 0, frameHeight: 0, framesPerSecond: 0, freezeCount: 0, pliCount: 0, nackCount: 0, jitter: 0, audioLevel: 0.25 },
      ],
    });
    t.gallery.showStats(stats(0, 0, 0));
    const quality = () => tile()?.querySelector<HTMLElement>('.quality');
    expect(quality()?.hidden).toBe(true); // nothing to compare with yet
    expect(tile()?.querySelector<HTMLElement>('.level')?.style.getPropertyValue('--level')).toBe('0.5');
    t.gallery.showStats(stats(2000, 100, 20));
    expect(quality()?.hidden).toBe(false);
    expect(quality()?.dataset['level']).toBe('poor');
    expect(quality()?.textContent).toBe('Poor');
    expect(quality()?.title).toBe('Connection poor: 17 % packet loss');
    expect(tile()?.getAttribute('aria-label')).toBe('Synthetic 02, speaking, connection poor');
    t.gallery.showStats(stats(4000, 200, 20));
    expect(quality()?.textContent).toBe('Good');
  });
});

describe('grid view with a screen share', () => {
  it('puts the share first on page 1', async () => {
    const t = await setup();
    t.key('g');
    t.key('PageDown');
    const before = t.onPage();
    // p11 (on page 2) starts sharing: its share gets a tile of its own, first on page 1
    t.ws.receive({ type: 'participant-updated', participant: { ...people[10], screen: 'p11-screen' } });
    expect(document.querySelector('.tile[data-participant-id="p11-screen"]')).not.toBeNull();
    t.prev.click();
    expect(t.onPage()).toEqual(['local', 'p11-screen', ...ids(1, 7)]);
    expect(t.conference.pinned).toContain('p11-screen');
    expect(before).toEqual(ids(9, 11));
  });
});
