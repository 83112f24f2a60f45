// @vitest-environment happy-dom
// The conference page's tiles, driven by a Conference on the fake WebSocket and
// peer connections: stage, speaking, forwarded, pins (click to pin / unpin),
// paused video, the Last N control, and bandwidth adaptation (suspended
// videos, layers, the estimate and the log of `stats` for the test hooks).

import { afterEach, describe, expect, it } from 'vitest';
import { Conference } from '../src/protocol';
import type { Participant } from '../src/protocol/messages';
import { Gallery, type GalleryOptions } from '../src/ui/gallery';
import { BandwidthLog, bandwidthIndicator, formatBitrate } from '../src/ui/bandwidth';
import { lastNControl } from '../src/ui/lastn';
import { PAUSED_TEXT, SUSPENDED_TEXT } from '../src/ui/tile';
import { asStream, FakeClock, FakePeerConnection, FakeStream, FakeTrack, FakeWebSocket, flush } from './fakes';

const bob: Participant = { id: 'pB', name: 'Bob', audioMuted: false, videoMuted: false };
const carol: Participant = { id: 'pC', name: 'Carol', audioMuted: false, videoMuted: false };
const dave: Participant = { id: 'pD', name: 'Dave Doe', audioMuted: false, videoMuted: false };

async function setup(participants: Participant[] = [bob, carol, dave], extra: Partial<GalleryOptions> = {}) {
  FakePeerConnection.created = [];
  const sockets: FakeWebSocket[] = [];
  const cam = new FakeTrack('video', 'cam-1');
  const clock = new FakeClock();
  const conference = new Conference({
    room: 'standup',
    name: 'Alice',
    url: 'ws://test/ws',
    localStream: asStream(new FakeStream('local', [new FakeTrack('audio', 'mic-1'), cam])),
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
  const gallery = new Gallery({ conference, name: 'Alice', localStream: null, ...extra });
  document.body.replaceChildren(gallery.el);
  const ws = () => {
    const s = sockets.at(-1);
    if (!s) throw new Error('no socket');
    return s;
  };
  conference.join();
  ws().open();
  ws().receive({
    type: 'welcome',
    version: 1,
    id: 'pA',
    room: 'standup',
    resume: { id: 'pA', secret: 's' },
    participants,
    iceServers: [],
  });
  await flush();
  const tile = (id: string) => {
    const el = document.querySelector<HTMLElement>(`.tile[data-participant-id="${id}"]`);
    if (!el) throw new Error(`no tile for ${id}`);
    return el;
  };
  const local = () => {
    const el = document.querySelector<HTMLElement>('.tile.local');
    if (!el) throw new Error('no local tile');
    return el;
  };
  const stageIds = () =>
    [...document.querySelectorAll<HTMLElement>('.tile.stage')].map((e) => e.dataset['participantId'] ?? 'local');
  return { conference, gallery, ws, tile, local, stageIds, cam, clock };
}

afterEach(() => {
  document.body.replaceChildren();
});

describe('gallery', () => {
  it('has one tile per participant and exactly one stage tile', async () => {
    const t = await setup();
    const remote = [...document.querySelectorAll<HTMLElement>('.tile:not(.local)')].map((e) => e.dataset['participantId']);
    expect(remote).toEqual(['pB', 'pC', 'pD']);
    expect(t.stageIds()).toEqual(['pB']); // nobody spoke yet: the first one
    expect(document.querySelector('.spotlight .tile')).toBe(t.tile('pB'));
    expect([...document.querySelectorAll('.strip .tile')]).toEqual([t.local(), t.tile('pC'), t.tile('pD')]);
  });

  it('gives audience participants no tile', async () => {
    const t = await setup([bob, { id: 'pV', name: 'Viewer', audioMuted: false, videoMuted: false, audience: true }]);
    t.ws().receive({ type: 'participant-joined', participant: { id: 'pW', name: 'Wes', audioMuted: false, videoMuted: false, audience: true } });
    const remote = [...document.querySelectorAll<HTMLElement>('.tile:not(.local)')].map((e) => e.dataset['participantId']);
    expect(remote).toEqual(['pB']);
    expect(t.conference.participants.get('pW')?.audience).toBe(true);
  });

  it('puts the local tile on stage when alone', async () => {
    const t = await setup([]);
    expect(t.stageIds()).toEqual(['local']);
    expect(document.querySelector<HTMLElement>('.strip')?.hidden).toBe(true);
    t.ws().receive({ type: 'participant-joined', participant: bob });
    expect(t.stageIds()).toEqual(['pB']);
    t.ws().receive({ type: 'participant-left', id: 'pB' });
    expect(t.stageIds()).toEqual(['local']);
  });

  it('follows the dominant speaker, keeping the stage when it is us or nobody', async () => {
    const t = await setup();
    t.ws().receive({ type: 'speaker', id: 'pC' });
    expect(t.stageIds()).toEqual(['pC']);
    expect(t.tile('pC').classList.contains('speaking')).toBe(true);
    expect(t.tile('pB').classList.contains('speaking')).toBe(false);

    t.ws().receive({ type: 'speaker', id: 'pA' }); // ourselves
    expect(t.stageIds()).toEqual(['pC']);
    expect(t.local().classList.contains('speaking')).toBe(true);
    expect(t.tile('pC').classList.contains('speaking')).toBe(false);

    t.ws().receive({ type: 'speaker', id: '' }); // nobody
    expect(t.stageIds()).toEqual(['pC']);
    expect(document.querySelectorAll('.tile.speaking')).toHaveLength(0);

    t.ws().receive({ type: 'speaker', id: 'pD' });
    expect(t.stageIds()).toEqual(['pD']);
    expect(document.querySelector('.spotlight .tile')).toBe(t.tile('pD'));
    expect([...document.querySelectorAll('.strip .tile')]).toEqual([t.local(), t.tile('pB'), t.tile('pC')]);

    // the stage occupant leaves while we speak: the first forwarded one takes over
    t.ws().receive({ type: 'forwarded', ids: ['pC', 'pB'], lastN: 2 });
    t.ws().receive({ type: 'speaker', id: 'pA' });
    t.ws().receive({ type: 'participant-left', id: 'pD' });
    expect(t.stageIds()).toEqual(['pC']);
  });

  it('shows participants outside the forwarded set as name tiles', async () => {
    const t = await setup();
    const video = (id: string) => t.tile(id).querySelector('video') as HTMLVideoElement;
    // before any `forwarded`, every tile shows video
    expect(document.querySelectorAll('.tile.not-forwarded')).toHaveLength(0);

    t.ws().receive({ type: 'forwarded', ids: ['pC'], lastN: 1 });
    expect(t.tile('pC').classList.contains('not-forwarded')).toBe(false);
    expect(video('pC').hidden).toBe(false);
    for (const id of ['pB', 'pD']) {
      expect(t.tile(id).classList.contains('not-forwarded')).toBe(true);
      expect(video(id).hidden).toBe(true);
    }
    expect(t.tile('pD').querySelector('.initials')?.textContent).toBe('DD');
    expect(t.local().classList.contains('not-forwarded')).toBe(false);

    t.ws().receive({ type: 'forwarded', ids: ['pB', 'pD'], lastN: 2 });
    expect(t.tile('pC').classList.contains('not-forwarded')).toBe(true);
    expect(t.tile('pB').classList.contains('not-forwarded')).toBe(false);
    expect(t.tile('pD').classList.contains('not-forwarded')).toBe(false);
    expect(video('pB').hidden).toBe(false);

    // a participant joining outside the set starts as a name tile
    t.ws().receive({ type: 'participant-joined', participant: { ...bob, id: 'pE', name: 'Eve' } });
    expect(t.tile('pE').classList.contains('not-forwarded')).toBe(true);
  });

  it('puts a clicked tile on stage over the dominant speaker until it is unpinned', async () => {
    const t = await setup();
    t.ws().receive({ type: 'speaker', id: 'pC' });
    expect(t.stageIds()).toEqual(['pC']);

    t.tile('pD').click();
    expect(t.conference.pinned).toEqual(['pD']);
    expect(t.stageIds()).toEqual(['pD']);
    expect(document.querySelector('.spotlight .tile')).toBe(t.tile('pD'));
    t.ws().receive({ type: 'speaker', id: 'pB' }); // the speaker changes: the pin keeps the stage
    expect(t.stageIds()).toEqual(['pD']);
    expect(t.tile('pB').classList.contains('speaking')).toBe(true);

    // another tile: it takes the stage and the pin
    t.tile('pC').click();
    expect(t.conference.pinned).toEqual(['pC']);
    expect(t.stageIds()).toEqual(['pC']);
    expect(t.ws().sent.filter((m) => m['type'] === 'pin' || m['type'] === 'unpin')).toEqual([
      { type: 'pin', id: 'pD' },
      { type: 'pin', id: 'pC' },
      { type: 'unpin', id: 'pD' },
    ]);

    // clicking the pinned stage tile unpins it: the dominant speaker takes the stage
    t.tile('pC').click();
    expect(t.conference.pinned).toEqual([]);
    expect(t.stageIds()).toEqual(['pB']);
  });

  it('stages and unstages through the API, and follows pins made through the library', async () => {
    const t = await setup();
    t.ws().receive({ type: 'speaker', id: 'pB' });
    t.gallery.putOnStage('pD');
    expect(t.gallery.stage).toBe('pD');
    expect(t.conference.pinned).toEqual(['pD']);
    t.gallery.putOnStage('pA'); // ourselves: nothing
    expect(t.gallery.stage).toBe('pD');
    t.gallery.unstage('pD');
    expect(t.conference.pinned).toEqual([]);
    expect(t.gallery.stage).toBe('pB');

    // a library pin also beats the speaker; unpinned through the library, the stage returns
    t.conference.pin('pC');
    expect(t.gallery.stage).toBe('pC');
    t.gallery.putOnStage('pD');
    expect(t.conference.pinned).toEqual(['pC', 'pD']); // the library's pin stays
    expect(t.gallery.stage).toBe('pD');
    t.conference.unpin('pD');
    expect(t.gallery.stage).toBe('pC');
    t.conference.unpin('pC');
    expect(t.gallery.stage).toBe('pB');

    // the staged participant leaves
    t.gallery.putOnStage('pD');
    t.ws().receive({ type: 'participant-left', id: 'pD' });
    expect(t.gallery.stage).toBe('pB');
  });

  it('pins on click and unpins on a second click', async () => {
    const t = await setup();
    t.tile('pC').click();
    expect(t.ws().sentOfType('pin')).toEqual([{ type: 'pin', id: 'pC' }]);
    expect(t.tile('pC').classList.contains('pinned')).toBe(true);
    expect(t.tile('pC').getAttribute('aria-pressed')).toBe('true');
    expect(t.tile('pB').classList.contains('pinned')).toBe(false);

    t.tile('pC').click();
    expect(t.ws().sentOfType('unpin')).toEqual([{ type: 'unpin', id: 'pC' }]);
    expect(t.tile('pC').classList.contains('pinned')).toBe(false);
    expect(t.ws().sent.filter((m) => m['type'] === 'pin' || m['type'] === 'unpin').map((m) => m['type'])).toEqual([
      'pin',
      'unpin',
    ]);

    // keyboard too
    t.tile('pB').dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
    expect(t.conference.pinned).toEqual(['pB']);
  });

  it('does not pin the local tile', async () => {
    const t = await setup();
    t.local().click();
    expect(t.ws().sentOfType('pin')).toEqual([]);
    expect(t.local().classList.contains('pinnable')).toBe(false);
  });

  it('shows pins made through the library and drops them when the participant leaves', async () => {
    const t = await setup();
    t.conference.pin('pD');
    expect(t.tile('pD').classList.contains('pinned')).toBe(true);
    t.ws().receive({ type: 'participant-left', id: 'pD' });
    expect(document.querySelectorAll('.tile.pinned')).toHaveLength(0);
  });

  it('marks the local tile while our video is paused', async () => {
    const t = await setup();
    const note = () => t.local().querySelector<HTMLElement>('.paused-note');
    expect(t.local().classList.contains('paused')).toBe(false);
    expect(note()?.hidden).toBe(true);
    t.ws().receive({ type: 'pause-video' });
    expect(t.local().classList.contains('paused')).toBe(true);
    expect(note()?.hidden).toBe(false);
    expect(note()?.textContent).toBe(PAUSED_TEXT);
    expect(t.cam.enabled).toBe(true); // the preview keeps running
    t.ws().receive({ type: 'resume-video' });
    expect(t.local().classList.contains('paused')).toBe(false);
    expect(note()?.hidden).toBe(true);
  });
});

describe('last N control', () => {
  it('calls setLastN and shows the room limit', async () => {
    const t = await setup();
    const label = lastNControl(t.conference);
    document.body.append(label);
    const select = label.querySelector('select') as HTMLSelectElement;
    expect([...select.options].map((o) => o.value)).toEqual(['1', '2', '3', '4', '6', '8', '12', '-1']);
    expect(select.value).toBe('-1');
    select.value = '3';
    select.dispatchEvent(new Event('change'));
    select.value = '-1';
    select.dispatchEvent(new Event('change'));
    expect(t.ws().sentOfType('set-last-n')).toEqual([
      { type: 'set-last-n', n: 3 },
      { type: 'set-last-n', n: -1 },
    ]);
    t.conference.setLastN(4); // through the library
    t.ws().receive({ type: 'forwarded', ids: ['pB'], lastN: 4 });
    expect(select.value).toBe('4');
    t.ws().receive({ type: 'room', lastN: 8, onStage: [] });
    expect(label.querySelector('.hint')?.textContent).toBe('room max 8');
  });
});

describe('bandwidth adaptation', () => {
  const stats = (estimate: number, videos: Record<string, unknown> = {}) => ({
    type: 'stats',
    estimate,
    allocated: Math.round(estimate * 0.75),
    switches: 3,
    videos,
  });

  it('shows a suspended video as a paused name tile until it comes back', async () => {
    const t = await setup();
    const video = (id: string) => t.tile(id).querySelector('video') as HTMLVideoElement;
    const note = (id: string) => t.tile(id).querySelector<HTMLElement>('.suspended-note');
    t.ws().receive({ type: 'forwarded', ids: ['pB', 'pC'], lastN: 2 });
    expect(document.querySelectorAll('.tile.suspended')).toHaveLength(0);
    expect(note('pB')?.hidden).toBe(true);
    expect(t.local().querySelector('.suspended-note')).toBeNull();

    // pD is not forwarded: it stays a plain name tile, without the bandwidth note
    t.ws().receive({ type: 'suspended', ids: ['pB', 'pD'] });
    expect(t.tile('pB').classList.contains('suspended')).toBe(true);
    expect(note('pB')?.hidden).toBe(false);
    expect(note('pB')?.textContent).toBe(SUSPENDED_TEXT);
    expect(video('pB').hidden).toBe(false); // invisible by CSS, still measured
    expect(t.tile('pC').classList.contains('suspended')).toBe(false);
    expect(t.tile('pD').classList.contains('suspended')).toBe(false);
    expect(note('pD')?.hidden).toBe(true);
    expect(t.stageIds()).toEqual(['pB']); // the stage does not move for it

    // pD becomes forwarded while suspended
    t.ws().receive({ type: 'forwarded', ids: ['pB', 'pC', 'pD'], lastN: 3 });
    expect(t.tile('pD').classList.contains('suspended')).toBe(true);

    t.ws().receive({ type: 'suspended', ids: [] });
    expect(document.querySelectorAll('.tile.suspended')).toHaveLength(0);
    expect(note('pB')?.hidden).toBe(true);
    expect(note('pD')?.hidden).toBe(true);
  });

  it('keeps reporting a suspended video as it is shown', async () => {
    const measure = (el: HTMLElement) =>
      el.closest('.spotlight') ? { width: 640, height: 360 } : { width: 192, height: 108 };
    const t = await setup([bob, carol], { measure, pixelRatio: () => 1 });
    t.ws().receive({ type: 'forwarded', ids: ['pB', 'pC'], lastN: 2 });
    t.clock.advance(200);
    const before = t.ws().sentOfType('constraints').length;
    t.ws().receive({ type: 'suspended', ids: ['pB'] });
    t.clock.advance(1000);
    expect(t.ws().sentOfType('constraints')).toHaveLength(before);
    expect(t.conference.constraintsSent['pB']).toEqual({ width: 640, height: 360, role: 'stage' });
  });

  it('shows the layer received on each forwarded video', async () => {
    const t = await setup();
    const layer = (id: string) => t.tile(id).querySelector<HTMLElement>('.layer');
    expect(layer('pB')?.hidden).toBe(true);
    expect(t.local().querySelector('.layer')).toBeNull();
    t.ws().receive({ type: 'forwarded', ids: ['pB', 'pC'], lastN: 2 });
    t.ws().receive(
      stats(2_400_000, {
        pB: { encoding: 2, temporal: 1, bitrate: 1_500_000, suspended: false },
        pC: { encoding: -1, temporal: 0, bitrate: 0, suspended: true },
      }),
    );
    expect(layer('pB')?.hidden).toBe(false);
    expect(layer('pB')?.textContent).toBe('L2T1');
    expect(layer('pB')?.title).toContain('1.5 Mb/s');
    expect(layer('pC')?.hidden).toBe(true); // no encoding
    expect(layer('pD')?.hidden).toBe(true); // no entry
    // suspended: the stale layer goes
    t.ws().receive({ type: 'suspended', ids: ['pB'] });
    expect(layer('pB')?.hidden).toBe(true);
    t.ws().receive({ type: 'suspended', ids: [] });
    expect(layer('pB')?.textContent).toBe('L2T1');
    t.ws().receive(stats(2_400_000, { pB: { encoding: 0, temporal: 2, bitrate: 150_000, suspended: false } }));
    expect(layer('pB')?.textContent).toBe('L0T2');
  });

  it('shows the downlink estimate once there is one', async () => {
    const t = await setup();
    const el = bandwidthIndicator(t.conference);
    document.body.append(el);
    expect(el.classList.contains('bandwidth')).toBe(true);
    expect(el.hidden).toBe(true);
    t.ws().receive(stats(0)); // no estimate yet
    expect(el.hidden).toBe(true);
    t.ws().receive(stats(2_400_000));
    expect(el.hidden).toBe(false);
    expect(el.textContent).toBe('↓ 2.4 Mb/s');
    expect(el.title).toContain('1.8 Mb/s');
    expect(el.title).toContain('3');
    t.ws().receive(stats(850_000));
    expect(el.textContent).toBe('↓ 850 kb/s');
    // a new session has no estimate until its first stats
    t.ws().serverClose(1006);
    t.clock.advance(300);
    t.ws().open();
    t.ws().receive({
      type: 'welcome',
      version: 1,
      id: 'pA',
      room: 'standup',
      resume: { id: 'pA', secret: 's' },
      participants: [bob],
      iceServers: [],
    });
    await flush();
    expect(el.hidden).toBe(true);
  });

  it('formats bit rates', () => {
    expect(formatBitrate(2_400_000)).toBe('2.4 Mb/s');
    expect(formatBitrate(1_000_000)).toBe('1.0 Mb/s');
    expect(formatBitrate(999_499)).toBe('999 kb/s');
    expect(formatBitrate(999_600)).toBe('1.0 Mb/s');
    expect(formatBitrate(999.6)).toBe('1 kb/s');
    expect(formatBitrate(150_000)).toBe('150 kb/s');
    expect(formatBitrate(900)).toBe('900 b/s');
    expect(formatBitrate(0)).toBe('0 b/s');
  });

  it('logs every stats message with its arrival time, the last ones only', async () => {
    const t = await setup();
    const log = new BandwidthLog(t.conference, () => t.clock.now(), 3);
    expect(log.list()).toEqual([]);
    const start = t.clock.now();
    for (let i = 1; i <= 5; i++) {
      t.ws().receive(stats(i * 100_000, { pB: { encoding: i % 3, temporal: 2, bitrate: 1000 * i, suspended: false } }));
      t.clock.advance(1000);
    }
    t.ws().receive({ type: 'suspended', ids: ['pB'] }); // not a stats message
    const list = log.list();
    expect(list.map((e) => [e.at - start, e.estimate])).toEqual([
      [2000, 300_000],
      [3000, 400_000],
      [4000, 500_000],
    ]);
    expect(list[2]).toEqual({
      at: start + 4000,
      estimate: 500_000,
      allocated: 375_000,
      switches: 3,
      videos: { pB: { encoding: 2, temporal: 2, bitrate: 5000, suspended: false } },
    });
    // copies
    const first = list[0]?.videos['pB'];
    if (first) first.encoding = 9;
    expect(log.list()[0]?.videos['pB']?.encoding).toBe(0);
  });
});

describe('constraints from the layout', () => {
  // Stage tiles render at 640×360 CSS pixels, thumbnails at 199×112; device pixel ratio 2.
  const measure = (el: HTMLElement) =>
    el.closest('.spotlight') ? { width: 640, height: 360 } : { width: 199.4, height: 112 };
  const stage = { width: 1280, height: 720, role: 'stage' };
  const thumb = { width: 399, height: 224, role: 'thumbnail' };

  it('reports the rendered size and role of every remote video, debounced, only changes', async () => {
    const t = await setup([bob, carol, dave], { measure, pixelRatio: () => 2 });
    const sent = () => t.ws().sentOfType('constraints');
    // the tiles appeared with the welcome, which sends every constraint at once
    expect(sent()).toEqual([{ type: 'constraints', videos: { pB: stage, pC: thumb, pD: thumb } }]);
    t.clock.advance(1000);
    expect(sent()).toHaveLength(1);

    // the stage moves to the speaker: two entries change
    t.ws().receive({ type: 'speaker', id: 'pC' });
    t.clock.advance(200);
    expect(sent()[1]).toEqual({ type: 'constraints', videos: { pB: thumb, pC: stage } });

    // a click stages another participant
    t.tile('pD').click();
    t.clock.advance(200);
    expect(sent()[2]).toEqual({ type: 'constraints', videos: { pC: thumb, pD: stage } });

    // a video outside the forwarded set counts as a thumbnail, even on stage
    t.ws().receive({ type: 'forwarded', ids: ['pB'], lastN: 1 });
    t.clock.advance(200);
    expect(sent()[3]).toEqual({ type: 'constraints', videos: { pD: { width: 1280, height: 720, role: 'thumbnail' } } });

    // nothing changed: nothing sent
    t.gallery.reportConstraints();
    t.clock.advance(1000);
    expect(sent()).toHaveLength(4);

    // a newcomer is reported; the one who left is forgotten
    t.ws().receive({ type: 'forwarded', ids: ['pB', 'pC', 'pD', 'pE'], lastN: -1 });
    t.ws().receive({ type: 'participant-joined', participant: { ...bob, id: 'pE', name: 'Eve' } });
    t.ws().receive({ type: 'participant-left', id: 'pB' });
    // pD back on stage is a role change, sent at once; the newcomer's size waits
    expect(sent()[4]).toEqual({ type: 'constraints', videos: { pD: stage } });
    t.clock.advance(200);
    expect(sent()[5]).toEqual({ type: 'constraints', videos: { pE: thumb } });
    expect(t.conference.constraintsSent).toEqual({ pC: thumb, pD: stage, pE: thumb });
  });

  it('leaves out tiles that are not laid out', async () => {
    const t = await setup([bob, carol], {
      measure: (el) => (el.closest('.spotlight') ? { width: 0, height: 0 } : { width: 160, height: 90 }),
      pixelRatio: () => 1.5,
    });
    expect(t.ws().sentOfType('constraints')).toEqual([
      { type: 'constraints', videos: { pC: { width: 240, height: 135, role: 'thumbnail' } } },
    ]);
  });
});
