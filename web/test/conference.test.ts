import { beforeEach, describe, expect, it } from 'vitest';
import { Conference, type ConferenceEvents, type ConferenceOptions } from '../src/protocol';
import type { Participant } from '../src/protocol/messages';
import {
  asStream,
  Deferred,
  FakeClock,
  FakePeerConnection,
  FakeStream,
  FakeTrack,
  FakeWebSocket,
  flush,
} from './fakes';

const URL = 'ws://127.0.0.1:8080/ws';
const RESUME = { id: 'pA', secret: 's3cret' };
const bob: Participant = { id: 'pB', name: 'Bob', audioMuted: false, videoMuted: true };
const carol: Participant = { id: 'pC', name: 'Carol', audioMuted: false, videoMuted: false };

type Recorded = { [K in keyof ConferenceEvents]: [K, ConferenceEvents[K]] }[keyof ConferenceEvents];

const silent = { debug: () => {}, warn: () => {} };

function setup(extra: Partial<ConferenceOptions> = {}) {
  const clock = new FakeClock();
  const sockets: FakeWebSocket[] = [];
  FakePeerConnection.created = [];
  const mic = new FakeTrack('audio', 'mic-1');
  const cam = new FakeTrack('video', 'cam-1');
  const local = new FakeStream('local-stream', [mic, cam]);
  const conf = new Conference({
    room: 'standup',
    name: 'Alice',
    url: URL,
    localStream: asStream(local),
    clock,
    createWebSocket: (url) => {
      const ws = new FakeWebSocket(url);
      sockets.push(ws);
      return ws;
    },
    createPeerConnection: (cfg) => new FakePeerConnection(cfg),
    codecs: (kind) =>
      kind === 'video'
        ? [
            { mimeType: 'video/H264', clockRate: 90000, sdpFmtpLine: 'profile-level-id=42e01f' },
            { mimeType: 'video/VP8', clockRate: 90000 },
            { mimeType: 'video/rtx', clockRate: 90000 },
            { mimeType: 'video/VP9', clockRate: 90000 },
          ]
        : null,
    logger: silent,
    ...extra,
  });
  const events: Recorded[] = [];
  const types: (keyof ConferenceEvents)[] = [
    'connection-state',
    'welcome',
    'participant-joined',
    'participant-updated',
    'participant-left',
    'participant-count',
    'participant-page',
    'track-added',
    'track-removed',
    'local-state',
    'peer-state',
    'reconnecting',
    'reconnected',
    'error',
    'closed',
    'speaker',
    'forwarded',
    'room',
    'video-paused',
    'pinned',
    'layers',
    'suspended',
    'bandwidth',
  ];
  for (const t of types) conf.on(t, (e) => events.push([t, e] as Recorded));

  const ws = () => {
    const s = sockets[sockets.length - 1];
    if (!s) throw new Error('no socket');
    return s;
  };
  /** The peer connections of the current session: [publish, subscribe]. */
  const pcs = () => {
    const c = FakePeerConnection.created;
    const pub = c[c.length - 2];
    const sub = c[c.length - 1];
    if (!pub || !sub) throw new Error('no peer connections');
    return { pub, sub };
  };
  const of = <K extends keyof ConferenceEvents>(type: K): ConferenceEvents[K][] =>
    events.filter((e) => e[0] === type).map((e) => e[1] as ConferenceEvents[K]);
  const welcome = (participants: Participant[] = [bob], id = 'pA') => ({
    type: 'welcome',
    version: 1,
    id,
    room: 'standup',
    resume: { ...RESUME, id },
    participants,
    iceServers: [{ urls: ['stun:127.0.0.1:3478'] }],
  });
  /** join() → socket open → welcome → publish offer sent. */
  const connect = async (participants: Participant[] = [bob]) => {
    conf.join();
    ws().open();
    ws().receive(welcome(participants));
    await flush();
  };
  return { conf, clock, sockets, ws, pcs, events, of, welcome, connect, mic, cam, local };
}

beforeEach(() => {
  FakePeerConnection.created = [];
});

describe('join and welcome', () => {
  it('sends join first, then handles welcome and publishes', async () => {
    const t = setup();
    t.conf.join();
    expect(t.sockets).toHaveLength(1);
    expect(t.ws().url).toBe(URL);
    expect(t.conf.state).toBe('connecting');
    t.ws().open();
    expect(t.ws().sent).toEqual([{ type: 'join', version: 1, room: 'standup', name: 'Alice', audioSlots: true }]);
    expect(FakePeerConnection.created).toHaveLength(0);

    t.ws().receive(t.welcome());
    await flush();

    expect(t.conf.id).toBe('pA');
    expect(t.conf.state).toBe('connected');
    expect([...t.conf.participants.values()]).toEqual([bob]);
    expect(t.of('participant-joined')).toEqual([{ participant: bob }]);
    expect(t.of('welcome')).toEqual([{ id: 'pA', room: 'standup', resumed: false, publish: true }]);

    const { pub, sub } = t.pcs();
    expect(pub.config.iceServers).toEqual([{ urls: ['stun:127.0.0.1:3478'] }]);
    expect(sub.config.iceServers).toEqual([{ urls: ['stun:127.0.0.1:3478'] }]);

    // audio + video, sendonly, in the local stream; video as three simulcast encodings, VP8 first
    expect(pub.transceivers).toHaveLength(2);
    const [a, v] = pub.transceivers;
    expect(a?.trackOrKind).toBe(t.mic);
    expect(a?.init?.direction).toBe('sendonly');
    expect(a?.init?.streams?.[0]).toBe(t.local);
    expect(v?.trackOrKind).toBe(t.cam);
    expect(v?.init?.direction).toBe('sendonly');
    // no sender capabilities listing scalability modes here: no scalabilityMode
    expect(v?.init?.sendEncodings).toEqual([
      { rid: 'q', scaleResolutionDownBy: 4, maxBitrate: 100_000 },
      { rid: 'h', scaleResolutionDownBy: 2, maxBitrate: 500_000 },
      { rid: 'f', scaleResolutionDownBy: 1, maxBitrate: 1_500_000 },
    ]);
    expect(v?.codecPreferences?.map((c) => (c as { mimeType: string }).mimeType)).toEqual([
      'video/VP8',
      'video/rtx',
    ]);
    expect(sub.transceivers).toHaveLength(0);

    expect(t.ws().sentOfType('offer')).toEqual([{ type: 'offer', pc: 'publish', sdp: pub.localDescriptions[0]?.sdp }]);
    expect(pub.localDescriptions).toHaveLength(1);

    t.ws().receive({ type: 'answer', pc: 'publish', sdp: 'server-answer' });
    await flush();
    expect(pub.remoteDescriptions).toEqual([{ type: 'answer', sdp: 'server-answer' }]);
  });

  it('joins as audience: no publish connection, no offer, media received', async () => {
    const t = setup({ localStream: null, audience: true });
    t.conf.join();
    t.ws().open();
    expect(t.ws().sent).toEqual([{ type: 'join', version: 1, room: 'standup', name: 'Alice', audience: true, audioSlots: true }]);
    t.ws().receive({ ...t.welcome(), permissions: { publish: false, subscribe: true, admin: false } });
    await flush();
    expect(t.of('welcome')).toEqual([{ id: 'pA', room: 'standup', resumed: false, publish: false }]);
    expect(FakePeerConnection.created).toHaveLength(1); // the subscribe connection only
    expect(t.ws().sentOfType('offer')).toEqual([]);
    const sub = FakePeerConnection.created[0]!;
    t.ws().receive({ type: 'offer', pc: 'subscribe', sdp: 'server-offer' });
    await flush();
    expect(sub.remoteDescriptions).toEqual([{ type: 'offer', sdp: 'server-offer' }]);
    expect(t.ws().sentOfType('answer')).toHaveLength(1);
  });

  it('makes no publish connection when the token grants no publish', async () => {
    const t = setup();
    t.conf.join();
    t.ws().open();
    t.ws().receive({ ...t.welcome(), permissions: { publish: false, subscribe: true, admin: false } });
    await flush();
    expect(FakePeerConnection.created).toHaveLength(1);
    expect(t.ws().sentOfType('offer')).toEqual([]);
    expect(t.of('welcome').at(-1)).toMatchObject({ publish: false });
  });

  it('publishes placeholder transceivers without local media', async () => {
    const t = setup({ localStream: null });
    await t.connect();
    const { pub } = t.pcs();
    expect(pub.transceivers.map((x) => x.trackOrKind)).toEqual(['audio', 'video']);
    expect(t.ws().sentOfType('offer')).toHaveLength(1);
  });

  it('sends the token when given', () => {
    const t = setup({ token: 'tok' });
    t.conf.join();
    t.ws().open();
    expect(t.ws().sent[0]).toMatchObject({ type: 'join', token: 'tok' });
  });
});

describe('negotiation', () => {
  it('answers every subscribe offer and never offers on subscribe', async () => {
    const t = setup();
    await t.connect();
    const { sub } = t.pcs();
    t.ws().receive({ type: 'offer', pc: 'subscribe', sdp: 'sub-offer-1' });
    await flush();
    t.ws().receive({ type: 'offer', pc: 'subscribe', sdp: 'sub-offer-2' });
    await flush();

    expect(sub.remoteDescriptions).toEqual([
      { type: 'offer', sdp: 'sub-offer-1' },
      { type: 'offer', sdp: 'sub-offer-2' },
    ]);
    const answers = t.ws().sentOfType('answer');
    expect(answers).toEqual([
      { type: 'answer', pc: 'subscribe', sdp: sub.localDescriptions[0]?.sdp },
      { type: 'answer', pc: 'subscribe', sdp: sub.localDescriptions[1]?.sdp },
    ]);
    expect(t.ws().sentOfType('offer').every((m) => m['pc'] === 'publish')).toBe(true);
  });

  it('answers back-to-back offers in order', async () => {
    const t = setup();
    await t.connect();
    const { sub } = t.pcs();
    const hold = new Deferred();
    sub.holdRemote = hold;
    t.ws().receive({ type: 'offer', pc: 'subscribe', sdp: 'o1' });
    t.ws().receive({ type: 'offer', pc: 'subscribe', sdp: 'o2' });
    await flush();
    expect(t.ws().sentOfType('answer')).toHaveLength(0);
    hold.resolve();
    await flush();
    expect(sub.remoteDescriptions.map((d) => d.sdp)).toEqual(['o1', 'o2']);
    expect(t.ws().sentOfType('answer')).toHaveLength(2);
  });

  it('queues remote candidates until the remote description is set', async () => {
    const t = setup();
    await t.connect();
    const { pub, sub } = t.pcs();
    const c1 = { candidate: 'candidate:1 1 udp 2122260223 127.0.0.1 50001 typ host', sdpMid: '0', sdpMLineIndex: 0 };
    const c2 = { candidate: 'candidate:2 1 udp 2122260223 127.0.0.1 50002 typ host', sdpMid: '0', sdpMLineIndex: 0 };

    // subscribe: candidates arrive before the offer
    t.ws().receive({ type: 'candidate', pc: 'subscribe', candidate: c1 });
    t.ws().receive({ type: 'candidate', pc: 'subscribe', candidate: c2 });
    await flush();
    expect(sub.addedCandidates).toEqual([]);
    t.ws().receive({ type: 'offer', pc: 'subscribe', sdp: 'sub-offer' });
    await flush();
    expect(sub.addedCandidates).toEqual([c1, c2]);

    // publish: a candidate arrives while the answer is still being applied
    const hold = new Deferred();
    pub.holdRemote = hold;
    t.ws().receive({ type: 'answer', pc: 'publish', sdp: 'pub-answer' });
    t.ws().receive({ type: 'candidate', pc: 'publish', candidate: c1 });
    await flush();
    expect(pub.addedCandidates).toEqual([]);
    hold.resolve();
    await flush();
    expect(pub.addedCandidates).toEqual([c1]);

    // after that, candidates are added directly; null is end of candidates
    t.ws().receive({ type: 'candidate', pc: 'publish', candidate: c2 });
    t.ws().receive({ type: 'candidate', pc: 'publish', candidate: null });
    await flush();
    expect(pub.addedCandidates).toEqual([c1, c2, undefined]);
  });

  it('trickles local candidates after the description was sent', async () => {
    const t = setup();
    t.conf.join();
    t.ws().open();
    t.ws().receive(t.welcome());
    // publish pc exists synchronously after welcome; the offer is still being made
    const { pub, sub } = t.pcs();
    const c = { candidate: 'candidate:9 1 udp 1 127.0.0.1 40000 typ host', sdpMid: '0', sdpMLineIndex: 0 };
    pub.emitCandidate(c);
    expect(t.ws().sentOfType('candidate')).toHaveLength(0);
    await flush();
    const kinds = t.ws().sent.map((m) => m['type']);
    expect(kinds.indexOf('offer')).toBeLessThan(kinds.indexOf('candidate'));
    expect(t.ws().sentOfType('candidate')).toEqual([{ type: 'candidate', pc: 'publish', candidate: c }]);

    pub.emitCandidate({ candidate: '', sdpMid: '0', sdpMLineIndex: 0 }); // legacy per-m-line end: dropped
    pub.emitCandidate(null);
    expect(t.ws().sentOfType('candidate').slice(1)).toEqual([{ type: 'candidate', pc: 'publish', candidate: null }]);

    // subscribe candidates wait for our answer
    sub.emitCandidate(c);
    expect(t.ws().sentOfType('candidate').filter((m) => m['pc'] === 'subscribe')).toHaveLength(0);
    t.ws().receive({ type: 'offer', pc: 'subscribe', sdp: 'o' });
    await flush();
    expect(t.ws().sentOfType('candidate').filter((m) => m['pc'] === 'subscribe')).toEqual([
      { type: 'candidate', pc: 'subscribe', candidate: c },
    ]);
  });

  it('reconnects when applying a server description fails', async () => {
    const t = setup();
    await t.connect();
    const { sub } = t.pcs();
    sub.failRemote = true;
    t.ws().receive({ type: 'offer', pc: 'subscribe', sdp: 'garbage' });
    await flush();
    expect(t.of('error')).toMatchObject([{ code: 'negotiation-failed', source: 'client', fatal: false }]);
    expect(t.of('reconnecting')).toHaveLength(1);
    expect(sub.closed).toBe(true);
  });
});

describe('participants and tracks', () => {
  it('applies batched participants messages and pages through the room', async () => {
    const t = setup();
    await t.connect([]);
    expect(t.conf.participantCount).toBe(1);
    t.ws().receive({ type: 'participants', participants: [carol, bob, { ...carol, id: 'pA', name: 'me' }], left: [], count: 3 });
    t.ws().receive({ type: 'participants', participants: [{ ...carol, audioMuted: true }], left: ['pB', 'pZ'], count: 250 });
    expect(t.of('participant-joined')).toEqual([{ participant: carol }, { participant: bob }]);
    expect(t.of('participant-updated')).toEqual([{ participant: { ...carol, audioMuted: true }, previous: carol }]);
    expect(t.of('participant-left')).toEqual([{ id: 'pB', participant: bob }]);
    expect([...t.conf.participants.keys()]).toEqual(['pC']);
    expect(t.of('participant-count')).toEqual([{ count: 1 }, { count: 3 }, { count: 250 }]);
    expect(t.conf.participantCount).toBe(250);

    t.conf.listParticipants();
    t.conf.listParticipants('100');
    expect(t.ws().sentOfType('list-participants')).toEqual([
      { type: 'list-participants', cursor: '' },
      { type: 'list-participants', cursor: '100' },
    ]);
    const page = { cursor: '', participants: [{ id: 'p9', name: 'Viewer', audioMuted: false, videoMuted: false }], next: '100', count: 251 };
    t.ws().receive({ type: 'participant-page', ...page });
    expect(t.of('participant-page')).toEqual([page]);
    expect(t.conf.participants.has('p9')).toBe(false); // a page is a snapshot, not the list
    expect(t.conf.participantCount).toBe(251);
  });

  it('emits joined, updated and left; duplicates are updates', async () => {
    const t = setup();
    await t.connect([]);
    t.ws().receive({ type: 'participant-joined', participant: carol });
    t.ws().receive({ type: 'participant-joined', participant: carol }); // no change: nothing
    t.ws().receive({ type: 'participant-updated', participant: { ...carol, audioMuted: true } });
    t.ws().receive({ type: 'participant-joined', participant: { ...carol, name: 'Caro' } });
    t.ws().receive({ type: 'participant-left', id: 'pC' });
    t.ws().receive({ type: 'participant-left', id: 'pC' }); // unknown now: nothing
    t.ws().receive({ type: 'participant-joined', participant: { ...carol, id: 'pA', name: 'me' } }); // self

    expect(t.of('participant-joined')).toEqual([{ participant: carol }]);
    expect(t.of('participant-updated')).toEqual([
      { participant: { ...carol, audioMuted: true }, previous: carol },
      { participant: { ...carol, name: 'Caro' }, previous: { ...carol, audioMuted: true } },
    ]);
    expect(t.of('participant-left')).toEqual([
      { id: 'pC', participant: { ...carol, name: 'Caro' } },
    ]);
    expect(t.conf.participants.size).toBe(0);
  });

  it('maps tracks to participants by stream id and drops them on removal', async () => {
    const t = setup();
    await t.connect([bob, carol]);
    const { sub } = t.pcs();
    t.ws().receive({ type: 'offer', pc: 'subscribe', sdp: 'o' });
    await flush();

    const bobAudio = new FakeTrack('audio', 'audio-pB');
    const bobVideo = new FakeTrack('video', 'video-pB');
    const bobStream = new FakeStream('pB', [bobAudio, bobVideo]);
    const carolVideo = new FakeTrack('video', 'random-track-id');
    const carolStream = new FakeStream('pC', [carolVideo]);
    sub.fireTrack(bobAudio, [bobStream], '0');
    sub.fireTrack(bobVideo, [bobStream], '1');
    sub.fireTrack(carolVideo, [carolStream], '2');
    sub.fireTrack(bobVideo, [bobStream], '1'); // repeated: no new event

    expect(t.of('track-added').map((e) => [e.participantId, e.kind, e.track])).toEqual([
      ['pB', 'audio', bobAudio],
      ['pB', 'video', bobVideo],
      ['pC', 'video', carolVideo],
    ]);
    expect(t.conf.tracks('pB').video?.track).toBe(bobVideo);

    bobStream.removeTrackRemotely(bobVideo);
    expect(t.of('track-removed').map((e) => [e.participantId, e.kind])).toEqual([['pB', 'video']]);
    expect(t.conf.tracks('pB').video).toBeUndefined();

    carolVideo.end();
    expect(t.of('track-removed').map((e) => [e.participantId, e.kind])).toEqual([
      ['pB', 'video'],
      ['pC', 'video'],
    ]);

    t.ws().receive({ type: 'participant-left', id: 'pB' });
    expect(t.of('track-removed').map((e) => [e.participantId, e.kind])).toEqual([
      ['pB', 'video'],
      ['pC', 'video'],
      ['pB', 'audio'],
    ]);
    const order = t.events.map((e) => e[0]).slice(-2);
    expect(order).toEqual(['track-removed', 'participant-left']);
  });

  it('falls back to the track id when a track has no stream', async () => {
    const t = setup();
    await t.connect();
    const track = new FakeTrack('video', 'video-pB');
    t.pcs().sub.fireTrack(track, []);
    expect(t.of('track-added')).toMatchObject([{ participantId: 'pB', kind: 'video' }]);
  });

  it('replaces a track of the same kind', async () => {
    const t = setup();
    await t.connect();
    const s = new FakeStream('pB');
    const v1 = new FakeTrack('video', 'video-pB-1');
    const v2 = new FakeTrack('video', 'video-pB-2');
    t.pcs().sub.fireTrack(v1, [s]);
    t.pcs().sub.fireTrack(v2, [s]);
    expect(t.events.filter((e) => e[0] === 'track-added' || e[0] === 'track-removed').map((e) => e[0])).toEqual([
      'track-added',
      'track-removed',
      'track-added',
    ]);
    expect(t.conf.tracks('pB').video?.track).toBe(v2);
  });
});

describe('keepalive and reconnect', () => {
  it('pings every 5 s and keeps the session while pongs arrive', async () => {
    const t = setup();
    await t.connect();
    for (let i = 0; i < 6; i++) {
      t.clock.advance(5000);
      const pings = t.ws().sentOfType('ping');
      expect(pings).toHaveLength(i + 1);
      t.ws().receive({ type: 'pong', ts: pings[i]?.['ts'] });
    }
    expect(t.ws().sentOfType('ping')[0]).toEqual({ type: 'ping', ts: 1_000_000 + 5000 });
    expect(t.sockets).toHaveLength(1);
    expect(t.of('reconnecting')).toHaveLength(0);
  });

  it('reconnects with resume when pongs stop, and republishes the same tracks', async () => {
    const t = setup();
    await t.connect([bob]);
    const first = t.ws();
    const { pub, sub } = t.pcs();

    t.clock.advance(11_999);
    expect(t.of('reconnecting')).toHaveLength(0);
    t.clock.advance(1);
    expect(t.of('reconnecting')).toEqual([{ attempt: 1, delayMs: 300, reason: 'keepalive timeout' }]);
    expect(t.conf.state).toBe('reconnecting');
    expect(first.closedByClient).toBeDefined();
    expect(pub.closed && sub.closed).toBe(true);
    expect(t.sockets).toHaveLength(1);

    t.clock.advance(299);
    expect(t.sockets).toHaveLength(1);
    t.clock.advance(1);
    expect(t.sockets).toHaveLength(2);
    t.ws().open();
    expect(t.ws().sent[0]).toEqual({
      type: 'join',
      version: 1,
      room: 'standup',
      name: 'Alice',
      resume: RESUME,
      audioSlots: true,
    });

    t.ws().receive(t.welcome([bob]));
    await flush();
    expect(t.conf.state).toBe('connected');
    expect(t.of('reconnected')).toEqual([{ id: 'pA', attempts: 1 }]);
    const again = t.pcs();
    expect(again.pub).not.toBe(pub);
    expect(again.pub.transceivers.map((x) => x.trackOrKind)).toEqual([t.mic, t.cam]);
    expect(t.ws().sentOfType('offer')).toHaveLength(1);
    // the resumed session restates the mute state
    expect(t.ws().sentOfType('mute')).toEqual([{ type: 'mute', audio: false, video: false }]);
  });

  it('reconnects when the socket closes and backs off up to 3 s', async () => {
    const t = setup();
    await t.connect();
    t.ws().serverClose(1006);
    const delays: number[] = [];
    for (let i = 0; i < 6; i++) {
      const last = t.of('reconnecting').at(-1);
      if (!last) throw new Error('no reconnecting event');
      delays.push(last.delayMs);
      t.clock.advance(last.delayMs);
      t.ws().serverClose(1006); // the server is still down
    }
    expect(delays).toEqual([300, 600, 1200, 2400, 3000, 3000]);

    // once a welcome arrives, the backoff starts over
    t.clock.advance(3000);
    t.ws().open();
    t.ws().receive(t.welcome());
    await flush();
    t.ws().serverClose(1006);
    expect(t.of('reconnecting').at(-1)?.delayMs).toBe(300);
  });

  it('retries the first join too, without a resume', async () => {
    const t = setup();
    t.conf.join();
    t.ws().serverClose(1006);
    expect(t.conf.state).toBe('connecting');
    t.clock.advance(300);
    t.ws().open();
    expect(t.ws().sent[0]).not.toHaveProperty('resume');
  });

  it('reconciles participants after a reconnect without duplicates', async () => {
    const t = setup();
    await t.connect([bob, carol]);
    const bobVideo = new FakeTrack('video', 'video-pB');
    t.pcs().sub.fireTrack(bobVideo, [new FakeStream('pB', [bobVideo])]);

    t.ws().serverClose(1006);
    // tracks die with the subscribe connection; participants stay
    expect(t.of('track-removed')).toMatchObject([{ participantId: 'pB', kind: 'video' }]);
    expect(t.conf.participants.size).toBe(2);

    t.clock.advance(300);
    t.ws().open();
    const dave: Participant = { id: 'pD', name: 'Dave', audioMuted: true, videoMuted: false };
    t.ws().receive(t.welcome([{ ...bob, videoMuted: false }, dave]));
    await flush();

    expect(t.of('participant-joined').map((e) => e.participant.id)).toEqual(['pB', 'pC', 'pD']);
    expect(t.of('participant-updated')).toEqual([{ participant: { ...bob, videoMuted: false }, previous: bob }]);
    expect(t.of('participant-left').map((e) => e.id)).toEqual(['pC']);
    expect([...t.conf.participants.keys()].sort()).toEqual(['pB', 'pD']);

    // the new subscribe connection brings Bob's track back under the same id
    const bobVideo2 = new FakeTrack('video', 'video-pB');
    t.pcs().sub.fireTrack(bobVideo2, [new FakeStream('pB', [bobVideo2])]);
    expect(t.conf.tracks('pB').video?.track).toBe(bobVideo2);
    expect(t.of('track-added')).toHaveLength(2);
  });

  it('ignores events from the peer connections of a lost session', async () => {
    const t = setup();
    await t.connect();
    const old = t.pcs();
    t.ws().serverClose(1006);
    t.clock.advance(300);
    t.ws().open();
    t.ws().receive(t.welcome());
    await flush();
    old.sub.fireTrack(new FakeTrack('video', 'video-pB'), [new FakeStream('pB')]);
    old.pub.setState('failed');
    old.pub.emitCandidate({ candidate: 'candidate:1 1 udp 1 127.0.0.1 1 typ host', sdpMid: '0', sdpMLineIndex: 0 });
    expect(t.of('track-added')).toHaveLength(0);
    expect(t.of('reconnecting')).toHaveLength(1);
    expect(t.ws().sentOfType('candidate')).toHaveLength(0);
  });

  it('reconnects when a peer connection fails', async () => {
    const t = setup();
    await t.connect();
    t.pcs().sub.setState('connected');
    t.pcs().sub.setState('failed');
    expect(t.of('reconnecting')).toEqual([{ attempt: 1, delayMs: 300, reason: 'subscribe connection failed' }]);
    expect(t.of('peer-state')).toEqual([
      { pc: 'subscribe', state: 'connected' },
      { pc: 'subscribe', state: 'failed' },
    ]);
  });

  it('reconnects when a peer connection is closed under it', async () => {
    const t = setup();
    await t.connect();
    t.pcs().pub.setState('closed');
    expect(t.of('reconnecting')).toEqual([{ attempt: 1, delayMs: 300, reason: 'publish connection closed' }]);
  });

  it('reconnects when the DTLS transport closes while the connection says connected', async () => {
    const t = setup();
    await t.connect();
    const { sub } = t.pcs();
    const dtls = { state: 'connected', onstatechange: null as ((ev: unknown) => void) | null };
    Object.assign(sub, { getReceivers: () => [{ transport: dtls }] });
    sub.setState('connected');
    expect(dtls.onstatechange).not.toBeNull();
    dtls.state = 'closed';
    dtls.onstatechange?.({});
    expect(t.of('reconnecting')).toEqual([
      { attempt: 1, delayMs: 300, reason: 'subscribe DTLS transport closed' },
    ]);
  });

  it('reconnects with its resume id after transport-failed', async () => {
    const t = setup();
    await t.connect();
    t.ws().receive({ type: 'error', code: 'transport-failed', message: 'publish connection closed; reconnect', fatal: true });
    expect(t.of('reconnecting')).toMatchObject([{ attempt: 1, delayMs: 300 }]);
    expect(t.of('closed')).toHaveLength(0);
    t.clock.advance(300);
    t.ws().open();
    expect(t.ws().sentOfType('join')[0]).toMatchObject({ resume: { id: expect.any(String) } });
  });

  it('reconnects when a peer connection stays disconnected for 4 s', async () => {
    const t = setup();
    await t.connect();
    const { pub } = t.pcs();
    pub.setState('connected');
    pub.setState('disconnected');
    t.clock.advance(3000);
    pub.setState('connected'); // recovered in time
    t.clock.advance(5000);
    expect(t.of('reconnecting')).toHaveLength(0);
    t.ws().receive({ type: 'pong', ts: 0 });

    pub.setState('disconnected');
    t.clock.advance(3999);
    expect(t.of('reconnecting')).toHaveLength(0);
    t.clock.advance(1);
    expect(t.of('reconnecting')).toMatchObject([{ reason: 'publish connection disconnected' }]);
  });

  it('reconnects after a fatal internal error', async () => {
    const t = setup();
    await t.connect();
    t.ws().receive({ type: 'error', code: 'internal', message: 'oops', fatal: true });
    expect(t.of('reconnecting')).toHaveLength(1);
    expect(t.of('error')).toEqual([{ code: 'internal', message: 'oops', fatal: true, source: 'server' }]);
    t.ws().serverClose(1011); // the old socket's close is ignored
    expect(t.of('reconnecting')).toHaveLength(1);
  });

  it('reconnects after a negotiation timeout', async () => {
    const t = setup();
    await t.connect();
    t.ws().receive({ type: 'error', code: 'negotiation-timeout', message: 'late', fatal: true });
    expect(t.of('reconnecting')).toHaveLength(1);
    expect(t.of('closed')).toHaveLength(0);
  });
});

describe('no reconnect', () => {
  const afterEnd = (t: ReturnType<typeof setup>) => {
    t.clock.advance(60_000);
    expect(t.sockets).toHaveLength(1);
    expect(t.of('reconnecting')).toHaveLength(0);
    expect(t.conf.state).toBe('closed');
    expect(t.clock.pending).toBe(0);
    const { pub, sub } = t.pcs();
    expect(pub.closed && sub.closed).toBe(true);
  };

  it('after bye', async () => {
    const t = setup();
    await t.connect([bob]);
    t.ws().receive({ type: 'bye', reason: 'server shutting down' });
    t.ws().serverClose(1001);
    expect(t.of('closed')).toEqual([{ reason: 'bye', message: 'server shutting down' }]);
    expect(t.of('participant-left').map((e) => e.id)).toEqual(['pB']);
    afterEnd(t);
  });

  it('after a fatal error', async () => {
    const t = setup();
    await t.connect();
    t.ws().receive({ type: 'error', code: 'bad-room', message: 'bad name', fatal: true });
    t.ws().serverClose(1008);
    expect(t.of('closed')).toEqual([{ reason: 'error', message: 'bad-room: bad name' }]);
    afterEnd(t);
  });

  it('after a fatal error in reply to join', () => {
    const t = setup();
    t.conf.join();
    t.ws().open();
    t.ws().receive({ type: 'error', code: 'bad-room', message: 'invalid room', fatal: true });
    t.ws().serverClose(1008);
    expect(t.conf.state).toBe('closed');
    t.clock.advance(60_000);
    expect(t.sockets).toHaveLength(1);
  });

  it('after leave', async () => {
    const t = setup();
    await t.connect();
    t.conf.leave();
    expect(t.ws().sent.at(-1)).toEqual({ type: 'leave' });
    expect(t.ws().closedByClient).toBe(1000);
    expect(t.of('closed')).toEqual([{ reason: 'left', message: 'left the room' }]);
    afterEnd(t);
  });

  it('after leave while waiting to reconnect', async () => {
    const t = setup();
    await t.connect();
    t.ws().serverClose(1006);
    t.conf.leave();
    t.clock.advance(10_000);
    expect(t.sockets).toHaveLength(1);
    expect(t.conf.state).toBe('closed');
  });

  it('but keeps going after a non-fatal error', async () => {
    const t = setup();
    await t.connect();
    t.ws().receive({ type: 'error', code: 'bad-candidate', message: 'x', fatal: false });
    expect(t.conf.state).toBe('connected');
    expect(t.of('error')).toHaveLength(1);
  });
});

describe('robustness', () => {
  it('ignores unknown message types and malformed frames', async () => {
    const t = setup();
    await t.connect();
    const before = t.events.length;
    const sentBefore = t.ws().sent.length;
    t.ws().receive({ type: 'layers', encodings: [] }); // reserved, not known yet
    t.ws().receive({ type: 'set-last-n', n: 3 }); // a client → server type
    t.ws().receive({ type: 'forwarded', ids: 'pB', lastN: 1 }); // ids not a list
    t.ws().receive({ type: 'speaker', id: 7 });
    t.ws().receive('not json');
    t.ws().receive('[1,2]');
    t.ws().receive({ type: 'participant-joined' }); // missing participant
    t.ws().receive({ type: 'offer', pc: 'sideways', sdp: 'x' });
    await flush();
    expect(t.events.length).toBe(before);
    expect(t.ws().sent.length).toBe(sentBefore);
    expect(t.conf.state).toBe('connected');
    // still working afterwards
    t.ws().receive({ type: 'participant-joined', participant: carol });
    expect(t.of('participant-joined').at(-1)).toEqual({ participant: carol });
  });

  it('ignores unknown fields', async () => {
    const t = setup();
    await t.connect([]);
    t.ws().receive({ type: 'participant-joined', participant: { ...carol, role: 'x' }, extra: 1 });
    expect(t.of('participant-joined')).toEqual([{ participant: carol }]);
  });

  it('keeps going when a listener throws', async () => {
    const t = setup();
    t.conf.on('participant-joined', () => {
      throw new Error('listener bug');
    });
    await t.connect([bob]);
    expect(t.conf.state).toBe('connected');
    expect(t.ws().sentOfType('offer')).toHaveLength(1);
  });
});

describe('mute', () => {
  it('sends mute and disables the local tracks', async () => {
    const t = setup();
    await t.connect();
    t.conf.mute(true, false);
    expect(t.ws().sentOfType('mute')).toEqual([{ type: 'mute', audio: true, video: false }]);
    expect(t.mic.enabled).toBe(false);
    expect(t.cam.enabled).toBe(true);
    expect(t.conf.localState).toEqual({ audioMuted: true, videoMuted: false, handRaised: false });
    t.conf.mute(false, true);
    expect(t.mic.enabled).toBe(true);
    expect(t.cam.enabled).toBe(false);
    expect(t.of('local-state')).toEqual([
      { audioMuted: true, videoMuted: false, handRaised: false },
      { audioMuted: false, videoMuted: true, handRaised: false },
    ]);
  });

  it('states a mute set before joining once welcomed', async () => {
    const t = setup();
    t.conf.mute(false, true);
    expect(t.cam.enabled).toBe(false);
    await t.connect();
    expect(t.ws().sentOfType('mute')).toEqual([{ type: 'mute', audio: false, video: true }]);
  });
});

describe('stats', () => {
  it('maps inbound entries to participants and lists outbound entries', async () => {
    const t = setup();
    await t.connect([bob, carol]);
    const { pub, sub } = t.pcs();
    const bobVideo = new FakeTrack('video', 'video-pB');
    const carolAudio = new FakeTrack('audio', 'receiver-xyz');
    sub.fireTrack(bobVideo, [new FakeStream('pB', [bobVideo])], '1');
    sub.fireTrack(carolAudio, [new FakeStream('pC', [carolAudio])], '2');
    sub.stats = [
      { type: 'transport', id: 'T1' },
      {
        type: 'inbound-rtp',
        kind: 'video',
        trackIdentifier: 'video-pB',
        mid: '1',
        packetsReceived: 100,
        bytesReceived: 120000,
        framesDecoded: 30,
        frameWidth: 320,
        frameHeight: 180,
        framesPerSecond: 29.5,
        freezeCount: 1,
        pliCount: 2,
        nackCount: 3,
        jitter: 0.004,
        packetsLost: 5,
      },
      { type: 'inbound-rtp', kind: 'audio', trackIdentifier: 'receiver-xyz', mid: '2', packetsReceived: 50 },
      { type: 'inbound-rtp', kind: 'audio', trackIdentifier: 'stale', mid: '9', packetsReceived: 1 },
    ];
    pub.stats = [
      { type: 'outbound-rtp', kind: 'video', packetsSent: 10, bytesSent: 1000, framesEncoded: 5, frameWidth: 320, frameHeight: 180, qualityLimitationReason: 'none' },
      { type: 'outbound-rtp', kind: 'audio', packetsSent: 20, bytesSent: 2000 },
    ];
    const st = await t.conf.stats();
    expect(st.inbound).toEqual([
      {
        participantId: 'pB',
        kind: 'video',
        trackId: 'video-pB',
        packetsReceived: 100,
        bytesReceived: 120000,
        framesDecoded: 30,
        frameWidth: 320,
        frameHeight: 180,
        framesPerSecond: 29.5,
        freezeCount: 1,
        pliCount: 2,
        nackCount: 3,
        jitter: 0.004,
        packetsLost: 5,
      },
      expect.objectContaining({ participantId: 'pC', kind: 'audio', packetsReceived: 50, framesDecoded: 0 }),
    ]);
    expect(st.outbound.map((o) => [o.kind, o.packetsSent])).toEqual([
      ['audio', 20],
      ['video', 10],
    ]);
    expect(st.outbound[1]).toMatchObject({ framesEncoded: 5, frameWidth: 320, qualityLimitationReason: 'none' });
    // `active` from the sender when the entry lacks it
    expect(st.outbound.map((o) => o.active)).toEqual([null, true]);
    expect(st.uplinkEstimate).toBe(0); // no candidate pair reported
  });

  it('reports the uplink estimate of the selected candidate pair', async () => {
    const t = setup();
    await t.connect([bob]);
    const { pub } = t.pcs();
    pub.stats = [
      { type: 'candidate-pair', id: 'CP1', nominated: true, state: 'succeeded', availableOutgoingBitrate: 300000 },
      { type: 'candidate-pair', id: 'CP2', nominated: true, state: 'succeeded', availableOutgoingBitrate: 2500000 },
      { type: 'transport', id: 'T1', selectedCandidatePairId: 'CP2' },
    ];
    expect((await t.conf.stats()).uplinkEstimate).toBe(2500000);
    // without a transport entry: a nominated, succeeded pair
    pub.stats = [
      { type: 'candidate-pair', id: 'CP0', nominated: false, state: 'in-progress', availableOutgoingBitrate: 1 },
      { type: 'candidate-pair', id: 'CP1', nominated: true, state: 'succeeded', availableOutgoingBitrate: 300000 },
    ];
    expect((await t.conf.stats()).uplinkEstimate).toBe(300000);
  });

  it('reports the encoding state of paused video', async () => {
    const t = setup();
    await t.connect([bob]);
    const { pub } = t.pcs();
    pub.stats = [
      { type: 'outbound-rtp', kind: 'video', bytesSent: 1000, framesEncoded: 5 },
      { type: 'outbound-rtp', kind: 'audio', bytesSent: 2000, active: true },
    ];
    t.ws().receive({ type: 'pause-video' });
    await flush();
    let st = await t.conf.stats();
    expect(st.outbound.map((o) => [o.kind, o.active])).toEqual([
      ['audio', true],
      ['video', false],
    ]);
    // the browser's own `active` wins
    pub.stats = [{ type: 'outbound-rtp', kind: 'video', bytesSent: 1000, framesEncoded: 5, active: true }];
    st = await t.conf.stats();
    expect(st.outbound[0]).toMatchObject({ bytesSent: 1000, framesEncoded: 5, active: true });
  });

  it('is empty before joining', async () => {
    const t = setup();
    const st = await t.conf.stats();
    expect(st.inbound).toEqual([]);
    expect(st.outbound).toEqual([]);
    expect(st.uplinkEstimate).toBe(0);
  });
});

describe('recycled receivers', () => {
  it('moves a reused receiver track to its new participant', async () => {
    const t = setup();
    await t.connect([bob, carol]);
    const track = new FakeTrack('video', 'video-pB');
    t.pcs().sub.fireTrack(track, [new FakeStream('pB', [track])], '1');
    t.pcs().sub.fireTrack(track, [new FakeStream('pC', [track])], '1');
    expect(t.conf.tracks('pB').video).toBeUndefined();
    expect(t.conf.tracks('pC').video?.track).toBe(track);
    expect(t.events.filter((e) => e[0].startsWith('track-')).map((e) => [e[0], (e[1] as { participantId: string }).participantId])).toEqual([
      ['track-added', 'pB'],
      ['track-removed', 'pB'],
      ['track-added', 'pC'],
    ]);
  });
});

describe('speaker, last N and video pausing', () => {
  it('tracks the dominant speaker', async () => {
    const t = setup();
    await t.connect([bob, carol]);
    expect(t.conf.dominantSpeaker).toBeNull();
    t.ws().receive({ type: 'speaker', id: 'pB' });
    expect(t.conf.dominantSpeaker).toBe('pB');
    t.ws().receive({ type: 'speaker', id: 'pB' }); // no change, no event
    t.ws().receive({ type: 'speaker', id: 'pA' }); // ourselves
    expect(t.conf.dominantSpeaker).toBe('pA');
    t.ws().receive({ type: 'speaker', id: '' });
    expect(t.conf.dominantSpeaker).toBeNull();
    t.ws().receive({ type: 'speaker', id: 'pC' });
    // a speaker who leaves is no longer dominant
    t.ws().receive({ type: 'participant-left', id: 'pC' });
    expect(t.conf.dominantSpeaker).toBeNull();
    expect(t.of('speaker')).toEqual([{ id: 'pB' }, { id: 'pA' }, { id: null }, { id: 'pC' }, { id: null }]);
  });

  it('tracks the forwarded set', async () => {
    const t = setup();
    await t.connect([bob, carol]);
    expect(t.conf.forwarded).toBeNull();
    expect(t.conf.isForwarded('pB')).toBe(true); // unknown: everything may flow
    t.ws().receive({ type: 'forwarded', ids: ['pC', 'pB'], lastN: 2 });
    expect(t.conf.forwarded).toEqual(['pC', 'pB']);
    expect(t.conf.forwardedLastN).toBe(2);
    t.ws().receive({ type: 'forwarded', ids: ['pC'], lastN: 1 });
    expect(t.conf.isForwarded('pB')).toBe(false);
    expect(t.conf.isForwarded('pC')).toBe(true);
    t.ws().receive({ type: 'forwarded', ids: null, lastN: 0 }); // Go's nil slice
    expect(t.conf.forwarded).toEqual([]);
    expect(t.of('forwarded')).toEqual([
      { ids: ['pC', 'pB'], lastN: 2 },
      { ids: ['pC'], lastN: 1 },
      { ids: [], lastN: 0 },
    ]);
    // the getter hands out copies
    t.conf.forwarded?.push('pX');
    expect(t.conf.forwarded).toEqual([]);
  });

  it('tracks the room settings and sends room-settings', async () => {
    const t = setup();
    expect(t.conf.setRoomSettings({ lastN: 4 })).toBe(false); // not connected
    await t.connect([bob]);
    expect(t.conf.roomSettings).toBeNull();
    t.ws().receive({ type: 'room', lastN: 8, onStage: [] });
    t.ws().receive({ type: 'room', lastN: -1, onStage: ['pB'] });
    expect(t.conf.roomSettings).toEqual({ lastN: -1, onStage: ['pB'] });
    expect(t.of('room')).toEqual([
      { lastN: 8, onStage: [] },
      { lastN: -1, onStage: ['pB'] },
    ]);

    expect(t.conf.setRoomSettings({ lastN: 4, onStage: ['pB'] })).toBe(true);
    expect(t.conf.setRoomSettings({ onStage: [] })).toBe(true);
    expect(t.conf.setRoomSettings({ lastN: -1 })).toBe(true);
    expect(t.conf.setRoomSettings({})).toBe(true);
    expect(t.ws().sentOfType('room-settings')).toEqual([
      { type: 'room-settings', lastN: 4, onStage: ['pB'] },
      { type: 'room-settings', onStage: [] },
      { type: 'room-settings', lastN: -1 },
      { type: 'room-settings' },
    ]);
    expect(() => t.conf.setRoomSettings({ lastN: -2 })).toThrow(RangeError);
    expect(() => t.conf.setRoomSettings({ lastN: 1.5 })).toThrow(RangeError);
  });

  it('sends pin, unpin and set-last-n', async () => {
    const t = setup();
    await t.connect([bob, carol]);
    t.conf.pin('pB');
    t.conf.pin('pC');
    t.conf.pin('pB'); // already pinned
    t.conf.pin('pA'); // ourselves: never
    expect(t.conf.pinned).toEqual(['pB', 'pC']);
    t.conf.unpin('pB');
    t.conf.unpin('pB'); // not pinned any more
    t.conf.setLastN(3);
    t.conf.setLastN(-1);
    expect(() => t.conf.setLastN(-2)).toThrow(RangeError);
    expect(() => t.conf.setLastN(2.5)).toThrow(RangeError);
    expect(t.conf.lastN).toBe(-1);
    const sent = t.ws().sent.filter((m) => ['pin', 'unpin', 'set-last-n'].includes(m['type'] as string));
    expect(sent).toEqual([
      { type: 'pin', id: 'pB' },
      { type: 'pin', id: 'pC' },
      { type: 'unpin', id: 'pB' },
      { type: 'set-last-n', n: 3 },
      { type: 'set-last-n', n: -1 },
    ]);
    expect(t.conf.pinned).toEqual(['pC']);
    expect(t.of('pinned')).toEqual([{ ids: ['pB'] }, { ids: ['pB', 'pC'] }, { ids: ['pC'] }]);
  });

  it('re-sends pins and last N after a resumed reconnect', async () => {
    const t = setup();
    await t.connect([bob, carol]);
    t.conf.pin('pC');
    t.conf.pin('pB');
    t.conf.setLastN(2);
    t.ws().serverClose(1006);
    t.clock.advance(300);
    t.ws().open();
    expect(t.ws().sent[0]).toMatchObject({ type: 'join', resume: RESUME });
    t.ws().receive(t.welcome([bob, carol]));
    await flush();
    expect(t.of('welcome').at(-1)).toMatchObject({ resumed: true });
    const sent = t.ws().sent.filter((m) => ['pin', 'unpin', 'set-last-n'].includes(m['type'] as string));
    expect(sent).toEqual([
      { type: 'set-last-n', n: 2 },
      { type: 'pin', id: 'pC' },
      { type: 'pin', id: 'pB' },
    ]);
    expect(t.conf.pinned).toEqual(['pC', 'pB']);
  });

  it('keeps pin changes made while reconnecting and drops pins of leavers', async () => {
    const t = setup();
    await t.connect([bob, carol]);
    t.conf.pin('pB');
    t.conf.pin('pC');
    t.ws().serverClose(1006);
    t.conf.unpin('pB'); // offline: the server may still hold it
    t.clock.advance(300);
    t.ws().open();
    t.ws().receive(t.welcome([carol])); // Bob left meanwhile
    await flush();
    const sent = t.ws().sent.filter((m) => ['pin', 'unpin'].includes(m['type'] as string));
    expect(sent).toEqual([
      { type: 'unpin', id: 'pB' },
      { type: 'pin', id: 'pC' },
    ]);
    // Carol leaves: her pin would hold a slot for nobody
    t.ws().receive({ type: 'participant-left', id: 'pC' });
    expect(t.conf.pinned).toEqual([]);
    expect(t.ws().sentOfType('unpin').at(-1)).toEqual({ type: 'unpin', id: 'pC' });
  });

  it('sends nothing extra after a fresh welcome without pins or last N', async () => {
    const t = setup();
    await t.connect([bob]);
    expect(t.ws().sent.map((m) => m['type'])).toEqual(['join', 'offer']);
  });

  it('pauses and resumes the video sender without renegotiating', async () => {
    const t = setup();
    await t.connect([bob]);
    const { pub } = t.pcs();
    t.ws().receive({ type: 'answer', pc: 'publish', sdp: 'answer' });
    await flush();
    const video = pub.transceivers[1];
    const audio = pub.transceivers[0];
    if (!video || !audio) throw new Error('no transceivers');
    expect(t.conf.videoPaused).toBe(false);

    t.ws().receive({ type: 'pause-video' });
    expect(t.conf.videoPaused).toBe(true);
    await flush();
    expect(video.sender.setCalls).toHaveLength(1);
    expect(video.sender.setCalls[0]?.encodings.map((e) => [e.rid, e.active])).toEqual([
      ['q', false],
      ['h', false],
      ['f', false],
    ]);
    expect(video.sender.active).toEqual([false, false, false]);
    // the camera keeps running (local preview), nothing renegotiated
    expect(t.cam.enabled).toBe(true);
    expect(t.ws().sentOfType('offer')).toHaveLength(1);
    expect(pub.localDescriptions).toHaveLength(1);
    expect(audio.sender.setCalls).toHaveLength(0);

    t.ws().receive({ type: 'pause-video' }); // again: nothing to change
    await flush();
    expect(video.sender.setCalls).toHaveLength(1);

    t.ws().receive({ type: 'resume-video' });
    expect(t.conf.videoPaused).toBe(false);
    await flush();
    expect(video.sender.setCalls).toHaveLength(2);
    expect(video.sender.setCalls[1]?.encodings.map((e) => e.active)).toEqual([true, true, true]);
    expect(video.sender.active).toEqual([true, true, true]);
    expect(t.of('video-paused')).toEqual([{ paused: true }, { paused: false }]);
  });

  it('applies quick pause/resume in order, the last word winning', async () => {
    const t = setup();
    await t.connect([bob]);
    const video = t.pcs().pub.transceivers[1];
    if (!video) throw new Error('no video transceiver');
    t.ws().receive({ type: 'pause-video' });
    t.ws().receive({ type: 'resume-video' });
    t.ws().receive({ type: 'pause-video' });
    await flush();
    expect(video.sender.active).toEqual([false, false, false]);
    expect(video.sender.setCalls.every((p) => p.encodings.every((e) => e.active === false))).toBe(true);
  });

  it('survives a failing setParameters', async () => {
    const t = setup();
    await t.connect([bob]);
    const video = t.pcs().pub.transceivers[1];
    if (!video) throw new Error('no video transceiver');
    video.sender.failSet = new Error('InvalidStateError');
    t.ws().receive({ type: 'pause-video' });
    await flush();
    expect(t.conf.state).toBe('connected');
    video.sender.failSet = null;
    t.ws().receive({ type: 'resume-video' });
    t.ws().receive({ type: 'pause-video' });
    await flush();
    expect(video.sender.active).toEqual([false, false, false]);
  });

  it('starts a new session resumed, pausing again only when told', async () => {
    const t = setup();
    await t.connect([bob]);
    t.ws().receive({ type: 'pause-video' });
    await flush();
    expect(t.conf.videoPaused).toBe(true);
    t.ws().serverClose(1006);
    t.clock.advance(300);
    t.ws().open();
    t.ws().receive(t.welcome([bob]));
    await flush();
    expect(t.conf.videoPaused).toBe(false);
    const fresh = t.pcs().pub.transceivers[1];
    if (!fresh) throw new Error('no video transceiver');
    expect(fresh.sender.setCalls).toHaveLength(0);
    expect(fresh.sender.active).toEqual([true, true, true]);
    t.ws().receive({ type: 'pause-video' });
    await flush();
    expect(fresh.sender.active).toEqual([false, false, false]);
    expect(t.of('video-paused')).toEqual([{ paused: true }, { paused: false }, { paused: true }]);
  });
});

describe('simulcast', () => {
  const vp8WithModes = (kind: 'audio' | 'video') =>
    kind === 'video'
      ? [
          { mimeType: 'video/VP8', clockRate: 90000, scalabilityModes: ['L1T1', 'L1T2', 'L1T3'] },
          { mimeType: 'video/VP9', clockRate: 90000, scalabilityModes: ['L1T3', 'L3T3'] },
        ]
      : null;
  /** Connected, the publish answer applied; returns the video transceiver. */
  const published = async (t: ReturnType<typeof setup>, participants: Participant[] = [bob]) => {
    await t.connect(participants);
    t.ws().receive({ type: 'answer', pc: 'publish', sdp: 'answer' });
    await flush();
    const video = t.pcs().pub.transceivers[1];
    if (!video) throw new Error('no video transceiver');
    return video;
  };
  const rids = (enc: { rid?: string; active?: boolean }[]) => enc.filter((e) => e.active).map((e) => e.rid);

  it('offers three VP8 encodings with temporal layers where the browser lists L1T3', async () => {
    const t = setup({ senderCodecs: vp8WithModes });
    await t.connect();
    expect(t.pcs().pub.transceivers[1]?.init?.sendEncodings).toEqual([
      { rid: 'q', scaleResolutionDownBy: 4, maxBitrate: 100_000, scalabilityMode: 'L1T3' },
      { rid: 'h', scaleResolutionDownBy: 2, maxBitrate: 500_000, scalabilityMode: 'L1T3' },
      { rid: 'f', scaleResolutionDownBy: 1, maxBitrate: 1_500_000, scalabilityMode: 'L1T3' },
    ]);
  });

  it('leaves scalabilityMode out when VP8 does not list it', async () => {
    const t = setup({
      senderCodecs: () => [
        { mimeType: 'video/VP8', clockRate: 90000 },
        { mimeType: 'video/VP9', clockRate: 90000, scalabilityModes: ['L1T3'] },
      ],
    });
    await t.connect();
    const encs = t.pcs().pub.transceivers[1]?.init?.sendEncodings ?? [];
    expect(encs.map((e) => e.rid)).toEqual(['q', 'h', 'f']);
    expect(encs.some((e) => 'scalabilityMode' in e)).toBe(false);
  });

  it('retries without scalabilityMode, then with one encoding, when the browser rejects them', async () => {
    let reject: (e: RTCRtpEncodingParameters[]) => boolean = (e) => e.some((x) => 'scalabilityMode' in x);
    const make = (cfg: ConstructorParameters<typeof FakePeerConnection>[0]) => {
      const pc = new FakePeerConnection(cfg);
      pc.rejectEncodings = (e) => reject(e);
      return pc;
    };
    const t = setup({ senderCodecs: vp8WithModes, createPeerConnection: make });
    await t.connect();
    let pub = t.pcs().pub;
    expect(pub.encodingAttempts.filter((e) => e !== undefined)).toHaveLength(2);
    expect(pub.transceivers[1]?.init?.sendEncodings?.map((e) => [e.rid, 'scalabilityMode' in e])).toEqual([
      ['q', false],
      ['h', false],
      ['f', false],
    ]);
    expect(t.ws().sentOfType('offer')).toHaveLength(1);

    // no simulcast at all: a single encoding
    reject = (e) => e.length > 1;
    t.ws().serverClose(1006);
    t.clock.advance(300);
    t.ws().open();
    t.ws().receive(t.welcome([bob]));
    await flush();
    pub = t.pcs().pub;
    expect(pub.transceivers[1]?.init?.sendEncodings).toEqual([{ maxBitrate: 1_500_000 }]);
  });

  it('publishes one encoding with simulcast off or the encodings given', async () => {
    const off = setup({ simulcast: false, videoMaxBitrate: 800_000, senderCodecs: vp8WithModes });
    await off.connect();
    expect(off.pcs().pub.transceivers[1]?.init?.sendEncodings).toEqual([{ maxBitrate: 800_000 }]);

    const given = setup({ videoEncodings: [{ rid: 'x', maxBitrate: 1000, scalabilityMode: 'L1T2' }], senderCodecs: vp8WithModes });
    await given.connect();
    expect(given.pcs().pub.transceivers[1]?.init?.sendEncodings).toEqual([
      { rid: 'x', maxBitrate: 1000, scalabilityMode: 'L1T2' },
    ]);
  });

  it('keeps the encodings of `layers` active, combined with pause and resume', async () => {
    const t = setup();
    const video = await published(t);
    const sender = video.sender;
    expect(t.conf.videoLayers).toBeNull();
    expect(sender.active).toEqual([true, true, true]);
    expect(sender.setCalls).toHaveLength(0); // the answer changed nothing

    t.ws().receive({ type: 'layers', active: ['q', 'f'] });
    await flush();
    expect(t.conf.videoLayers).toEqual(['q', 'f']);
    expect(sender.active).toEqual([true, false, true]);
    expect(rids(sender.setCalls.at(-1)?.encodings ?? [])).toEqual(['q', 'f']);
    // other parameters are given back untouched
    expect(sender.setCalls.at(-1)?.encodings.map((e) => e.maxBitrate)).toEqual([100_000, 500_000, 1_500_000]);

    t.ws().receive({ type: 'layers', active: ['f', 'q'] }); // the same set
    await flush();
    expect(sender.setCalls).toHaveLength(1);

    t.ws().receive({ type: 'pause-video' });
    await flush();
    expect(sender.active).toEqual([false, false, false]);
    // layers while paused: remembered, nothing sent
    t.ws().receive({ type: 'layers', active: ['h'] });
    await flush();
    expect(sender.active).toEqual([false, false, false]);
    expect(t.conf.videoLayers).toEqual(['h']);

    t.ws().receive({ type: 'resume-video' });
    await flush();
    expect(sender.active).toEqual([false, true, false]);

    // an empty list turns every encoding off; unknown RIDs select nothing
    t.ws().receive({ type: 'layers', active: [] });
    await flush();
    expect(sender.active).toEqual([false, false, false]);
    expect(t.conf.videoPaused).toBe(false);
    t.ws().receive({ type: 'layers', active: ['h', 'x'] });
    await flush();
    expect(sender.active).toEqual([false, true, false]);

    expect(t.of('layers')).toEqual([
      { active: ['q', 'f'] },
      { active: ['h'] },
      { active: [] },
      { active: ['h', 'x'] },
    ]);
    // every step was getParameters + setParameters with a fresh transaction id
    expect(new Set(sender.setCalls.map((p) => p.transactionId)).size).toBe(sender.setCalls.length);
  });

  it('applies quick layers changes in order, the last word winning', async () => {
    const t = setup();
    const { sender } = await published(t);
    t.ws().receive({ type: 'layers', active: ['q'] });
    t.ws().receive({ type: 'pause-video' });
    t.ws().receive({ type: 'layers', active: ['h', 'f'] });
    t.ws().receive({ type: 'resume-video' });
    await flush();
    expect(sender.active).toEqual([false, true, true]);
  });

  it('applies layers received before the publish answer', async () => {
    const t = setup();
    await t.connect();
    t.ws().receive({ type: 'layers', active: ['h'] });
    t.ws().receive({ type: 'answer', pc: 'publish', sdp: 'answer' });
    await flush();
    expect(t.pcs().pub.transceivers[1]?.sender.active).toEqual([false, true, false]);
  });

  it('starts a new session with every encoding active', async () => {
    const t = setup();
    const { sender } = await published(t);
    t.ws().receive({ type: 'layers', active: ['q'] });
    await flush();
    expect(sender.active).toEqual([true, false, false]);
    t.ws().serverClose(1006);
    t.clock.advance(300);
    t.ws().open();
    t.ws().receive(t.welcome([bob]));
    await flush();
    expect(t.conf.videoLayers).toBeNull();
    const fresh = t.pcs().pub.transceivers[1];
    expect(fresh?.init?.sendEncodings?.every((e) => e.active !== false)).toBe(true);
    expect(fresh?.sender.active).toEqual([true, true, true]);
    expect(t.of('layers').at(-1)).toEqual({ active: null });
  });

  it('leaves a single encoding without RID to pause and resume only', async () => {
    const t = setup({ simulcast: false });
    const { sender } = await published(t);
    t.ws().receive({ type: 'layers', active: ['q'] });
    await flush();
    expect(sender.active).toEqual([true]);
    expect(sender.setCalls).toHaveLength(0);
    t.ws().receive({ type: 'pause-video' });
    await flush();
    expect(sender.active).toEqual([false]);
  });

  it('publishes as many encodings as the capture size calls for', async () => {
    const offered = async (settings: { width: number; height: number } | null) => {
      const t = setup();
      t.cam.settings = settings;
      const v = await published(t);
      return v.init?.sendEncodings?.map((e) => [e.rid, e.scaleResolutionDownBy, e.maxBitrate, e.active]);
    };
    // 320×180: no simulcast, one encoding without RID
    expect(await offered({ width: 320, height: 180 })).toEqual([[undefined, undefined, 1_500_000, undefined]]);
    // 640×360: ½ and full under q's and h's caps
    expect(await offered({ width: 640, height: 360 })).toEqual([
      ['q', 2, 100_000, undefined],
      ['h', 1, 500_000, undefined],
    ]);
    // 1280×720 and an unknown size: the three
    const three = [
      ['q', 4, 100_000, undefined],
      ['h', 2, 500_000, undefined],
      ['f', 1, 1_500_000, undefined],
    ];
    expect(await offered({ width: 1280, height: 720 })).toEqual(three);
    expect(await offered(null)).toEqual(three);
  });

  it('turns encodings on only in combinations the browser sends in full when the capture shrinks', async () => {
    // published at 1280×720, then the camera gives 320×180: libwebrtc would send
    // one layer, the first active one — keep the full-size one
    const small = setup();
    small.cam.settings = { width: 1280, height: 720 };
    const v = await published(small);
    expect(v.sender.active).toEqual([true, true, true]);
    small.cam.settings = { width: 320, height: 180 };
    small.ws().receive({ type: 'layers', active: ['q'] }); // one encoding: as asked
    await flush();
    expect(v.sender.active).toEqual([true, false, false]);
    small.ws().receive({ type: 'layers', active: ['q', 'f'] }); // two: the larger one
    await flush();
    expect(v.sender.active).toEqual([false, false, true]);
    small.ws().receive({ type: 'pause-video' });
    await flush();
    expect(v.sender.active).toEqual([false, false, false]);

    // 640×480 now: two layers, the first two in order
    const mid = setup();
    mid.cam.settings = { width: 1280, height: 720 };
    const m = await published(mid);
    mid.cam.settings = { width: 640, height: 480 };
    mid.ws().receive({ type: 'layers', active: ['q', 'h'] });
    await flush();
    expect(m.sender.active).toEqual([true, true, false]);
    mid.ws().receive({ type: 'layers', active: ['h', 'f'] });
    await flush();
    expect(m.sender.active).toEqual([false, false, true]);

    // 1280×720: everything as asked
    const big = setup();
    big.cam.settings = { width: 1280, height: 720 };
    const b = await published(big);
    big.ws().receive({ type: 'layers', active: ['q', 'f'] });
    await flush();
    expect(b.sender.active).toEqual([true, false, true]);

    // the limit can be turned off: three encodings, all on, whatever the capture
    const raw = setup({ layerLimit: false });
    raw.cam.settings = { width: 320, height: 180 };
    const r = await published(raw);
    expect(r.sender.active).toEqual([true, true, true]);
  });

  it('reports one outbound row per encoding, with its RID and state', async () => {
    const t = setup();
    const { sender } = await published(t);
    t.ws().receive({ type: 'layers', active: ['q', 'h'] });
    await flush();
    expect(sender.active).toEqual([true, true, false]);
    const { pub, sub } = t.pcs();
    const row = (rid: string, extra: Record<string, unknown> = {}) => ({
      type: 'outbound-rtp',
      kind: 'video',
      rid,
      bytesSent: 100,
      framesEncoded: 10,
      frameWidth: 320,
      frameHeight: 180,
      qualityLimitationReason: 'bandwidth',
      scalabilityMode: 'L1T3',
      ...extra,
    });
    pub.stats = [
      row('f', { frameWidth: 0, frameHeight: 0 }),
      { type: 'outbound-rtp', kind: 'audio', bytesSent: 5 },
      row('q'),
      row('h', { frameWidth: 640, frameHeight: 360, active: false }), // the browser's own flag wins
    ];
    const bobVideo = new FakeTrack('video', 'video-pB');
    sub.fireTrack(bobVideo, [new FakeStream('pB', [bobVideo])], '1');
    sub.stats = [
      {
        type: 'inbound-rtp',
        kind: 'video',
        trackIdentifier: 'video-pB',
        frameWidth: 640,
        frameHeight: 360,
        framesDecoded: 90,
        freezeCount: 1,
        pliCount: 2,
        totalFreezesDuration: 0.5,
        keyFramesDecoded: 3,
      },
    ];
    const st = await t.conf.stats();
    expect(st.outbound.map((o) => [o.kind, o.rid, o.active, o.frameWidth, o.frameHeight])).toEqual([
      ['audio', null, null, 0, 0],
      ['video', 'q', true, 320, 180],
      ['video', 'h', false, 640, 360],
      ['video', 'f', false, 0, 0],
    ]);
    expect(st.outbound[1]).toMatchObject({
      bytesSent: 100,
      framesEncoded: 10,
      qualityLimitationReason: 'bandwidth',
      scalabilityMode: 'L1T3',
    });
    expect(st.inbound[0]).toMatchObject({
      participantId: 'pB',
      frameWidth: 640,
      frameHeight: 360,
      framesDecoded: 90,
      freezeCount: 1,
      pliCount: 2,
      totalFreezesDuration: 0.5,
      keyFramesDecoded: 3,
    });
    // absent in the report: absent in the row
    sub.stats = [{ type: 'inbound-rtp', kind: 'video', trackIdentifier: 'video-pB', framesDecoded: 1 }];
    const again = await t.conf.stats();
    expect(again.inbound[0]).not.toHaveProperty('totalFreezesDuration');
    expect(again.inbound[0]).not.toHaveProperty('keyFramesDecoded');
  });
});

describe('constraints', () => {
  const stage = { width: 1280, height: 720, role: 'stage' as const };
  const thumb = { width: 398, height: 224, role: 'thumbnail' as const };

  it('collects changes for 200 ms and sends only what changed', async () => {
    const t = setup();
    await t.connect([bob, carol]);
    t.conf.setConstraints({ pB: stage, pC: thumb });
    expect(t.ws().sentOfType('constraints')).toEqual([]);
    t.clock.advance(100);
    t.conf.setConstraints({ pB: { width: 1279.6, height: 720.2, role: 'stage' } }); // rounds to the same
    t.clock.advance(99);
    expect(t.ws().sentOfType('constraints')).toEqual([]);
    t.clock.advance(1);
    expect(t.ws().sentOfType('constraints')).toEqual([{ type: 'constraints', videos: { pB: stage, pC: thumb } }]);
    expect(t.conf.constraintsSent).toEqual({ pB: stage, pC: thumb });

    // nothing new: nothing sent
    t.conf.setConstraints({ pB: stage, pC: thumb });
    t.clock.advance(1000);
    expect(t.ws().sentOfType('constraints')).toHaveLength(1);

    // the stage moves (one report from the layout): sent at once, in one message
    t.conf.setConstraints({ pB: thumb, pC: stage });
    expect(t.ws().sentOfType('constraints')).toEqual([
      { type: 'constraints', videos: { pB: stage, pC: thumb } },
      { type: 'constraints', videos: { pB: thumb, pC: stage } },
    ]);
    // size changes are collected; a change undone in time is not sent
    t.conf.setConstraints({ pB: { width: 100, height: 50, role: 'thumbnail' } });
    t.clock.advance(50);
    t.conf.setConstraints({ pB: thumb });
    t.clock.advance(150);
    expect(t.ws().sentOfType('constraints')).toHaveLength(2);
    expect(t.conf.constraints).toEqual({ pB: thumb, pC: stage });
  });

  it('ignores our own id and rejects invalid sizes and roles', async () => {
    const t = setup({ constraintsDelayMs: 0 });
    await t.connect([bob]);
    t.conf.setConstraints({ pA: stage });
    expect(t.ws().sentOfType('constraints')).toEqual([]);
    expect(() => t.conf.setConstraints({ pB: { width: -1, height: 2 } })).toThrow(TypeError);
    expect(() => t.conf.setConstraints({ pB: { width: Number.NaN, height: 2 } })).toThrow(TypeError);
    expect(() => t.conf.setConstraints({ pB: { width: 1, height: 2, role: 'big' as 'stage' } })).toThrow(TypeError);
    expect(t.conf.constraints).toEqual({});
    // without delay: sent at once; a Map works too
    t.conf.setConstraints(new Map([['pB', { width: 320, height: 180 }]]));
    expect(t.ws().sentOfType('constraints')).toEqual([{ type: 'constraints', videos: { pB: { width: 320, height: 180 } } }]);
  });

  it('holds constraints until welcome and re-sends them in full after a reconnect', async () => {
    const t = setup();
    t.conf.setConstraints({ pB: stage });
    t.conf.join();
    t.ws().open();
    t.clock.advance(500);
    expect(t.ws().sentOfType('constraints')).toEqual([]);
    t.ws().receive(t.welcome([bob, carol]));
    expect(t.ws().sentOfType('constraints')).toEqual([{ type: 'constraints', videos: { pB: stage } }]);
    t.conf.setConstraints({ pC: thumb });
    t.clock.advance(200);
    expect(t.ws().sentOfType('constraints')).toHaveLength(2);

    // a change pending when the session is lost is sent with the rest after welcome
    t.conf.setConstraints({ pC: { ...thumb, width: 400 } });
    t.ws().serverClose(1006);
    expect(t.conf.constraintsSent).toEqual({ pB: stage, pC: thumb }); // what the lost session knew
    t.clock.advance(300);
    t.ws().open();
    t.ws().receive({ ...t.welcome([bob, carol]) });
    expect(t.ws().sentOfType('constraints')).toEqual([
      { type: 'constraints', videos: { pB: stage, pC: { ...thumb, width: 400 } } },
    ]);
    t.clock.advance(1000);
    expect(t.ws().sentOfType('constraints')).toHaveLength(1);
    expect(t.conf.constraintsSent).toEqual({ pB: stage, pC: { ...thumb, width: 400 } });
  });

  it('forgets participants who left', async () => {
    const t = setup({ constraintsDelayMs: 0 });
    await t.connect([bob, carol]);
    t.conf.setConstraints({ pB: stage, pC: thumb });
    t.ws().receive({ type: 'participant-left', id: 'pC' });
    expect(t.conf.constraints).toEqual({ pB: stage });
    expect(t.conf.constraintsSent).toEqual({ pB: stage });
    t.ws().serverClose(1006);
    t.clock.advance(300);
    t.ws().open();
    t.ws().receive(t.welcome([bob]));
    expect(t.ws().sentOfType('constraints')).toEqual([{ type: 'constraints', videos: { pB: stage } }]);
  });
});

describe('bandwidth adaptation', () => {
  const stats = {
    type: 'stats',
    estimate: 2_400_000,
    allocated: 1_800_000,
    switches: 3,
    videos: {
      pB: { encoding: 2, temporal: 2, bitrate: 1_500_000, suspended: false },
      pC: { encoding: -1, temporal: 0, bitrate: 0, suspended: true },
    },
  };
  const body = { estimate: stats.estimate, allocated: stats.allocated, switches: stats.switches, videos: stats.videos };

  it('tracks the suspended videos, with an event per change', async () => {
    const t = setup();
    await t.connect([bob, carol]);
    t.ws().receive({ type: 'forwarded', ids: ['pB', 'pC'], lastN: 2 });
    expect(t.conf.suspended).toEqual([]);
    t.ws().receive({ type: 'suspended', ids: ['pC'] });
    expect(t.conf.suspended).toEqual(['pC']);
    expect(t.conf.isSuspended('pC')).toBe(true);
    expect(t.conf.isSuspended('pB')).toBe(false);
    t.ws().receive({ type: 'suspended', ids: ['pC'] }); // no change, no event
    t.ws().receive({ type: 'suspended', ids: ['pB', 'pC'] });
    t.ws().receive({ type: 'suspended', ids: ['pC', 'pB'] }); // same set
    t.ws().receive({ type: 'suspended', ids: null }); // Go's nil slice: none
    expect(t.conf.suspended).toEqual([]);
    t.ws().receive({ type: 'suspended', ids: 'pB' }); // malformed: ignored
    expect(t.conf.suspended).toEqual([]);
    expect(t.of('suspended')).toEqual([{ ids: ['pC'] }, { ids: ['pB', 'pC'] }, { ids: [] }]);
    // the getter hands out copies
    t.ws().receive({ type: 'suspended', ids: ['pB'] });
    t.conf.suspended.push('pX');
    expect(t.conf.suspended).toEqual(['pB']);
    // nothing is sent back
    expect(t.ws().sent.map((m) => m['type'])).not.toContain('suspended');
  });

  it('keeps the latest stats and emits every one', async () => {
    const t = setup();
    await t.connect([bob, carol]);
    expect(t.conf.bandwidth).toBeNull();
    t.ws().receive(stats);
    expect(t.conf.bandwidth).toEqual(body);
    t.ws().receive(stats); // periodic: the same figures are a new sample
    const lower = { ...stats, estimate: 600_000, allocated: 450_000, switches: 4 };
    t.ws().receive(lower);
    t.ws().receive({ ...stats, estimate: -1 }); // malformed: ignored
    expect(t.conf.bandwidth).toEqual({ ...body, estimate: 600_000, allocated: 450_000, switches: 4 });
    expect(t.of('bandwidth')).toEqual([
      { stats: body },
      { stats: body },
      { stats: { ...body, estimate: 600_000, allocated: 450_000, switches: 4 } },
    ]);
    // copies: neither the getter's nor an event's value changes the state
    const got = t.conf.bandwidth;
    if (!got?.videos['pB']) throw new Error('no stats');
    got.videos['pB'].encoding = 0;
    got.estimate = 1;
    const ev = t.of('bandwidth')[2]?.stats;
    if (!ev?.videos['pB']) throw new Error('no event');
    ev.videos['pB'].encoding = 0;
    expect(t.conf.bandwidth?.videos['pB']?.encoding).toBe(2);
    expect(t.conf.bandwidth?.estimate).toBe(600_000);
  });

  it('starts a new session with nothing suspended and no stats', async () => {
    const t = setup();
    await t.connect([bob, carol]);
    t.ws().receive({ type: 'suspended', ids: ['pC'] });
    t.ws().receive(stats);
    t.ws().serverClose(1006);
    // until the new welcome the last word stands
    expect(t.conf.suspended).toEqual(['pC']);
    t.clock.advance(300);
    t.ws().open();
    t.ws().receive(t.welcome([bob, carol]));
    await flush();
    expect(t.conf.suspended).toEqual([]);
    expect(t.conf.bandwidth).toBeNull();
    expect(t.of('suspended')).toEqual([{ ids: ['pC'] }, { ids: [] }]);
    expect(t.of('bandwidth')).toEqual([{ stats: body }, { stats: null }]);
    // a fresh welcome without any of it emits nothing more
    t.ws().serverClose(1006);
    t.clock.advance(300);
    t.ws().open();
    t.ws().receive(t.welcome([bob, carol]));
    await flush();
    expect(t.of('suspended')).toHaveLength(2);
    expect(t.of('bandwidth')).toHaveLength(2);
  });
});
