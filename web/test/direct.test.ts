import { describe, expect, it } from 'vitest';
import { Conference, type ConferenceEvents } from '../src/protocol';
import type { PeerConnectionConfig } from '../src/protocol/env';
import type { Participant } from '../src/protocol/messages';
import { asStream, FakeClock, FakePeerConnection, FakeStream, FakeTrack, FakeWebSocket, flush } from './fakes';

const bob: Participant = { id: 'pB', name: 'Bob', audioMuted: false, videoMuted: false };
const silent = { debug: () => {}, warn: () => {} };

/** The direct connection: a fake peer connection with what direct.ts uses beyond PeerConnectionLike. */
class FakeDirect extends FakePeerConnection {
  static made: FakeDirect[] = [];
  readonly added: FakeTrack[] = [];
  constructor(config: PeerConnectionConfig) {
    super(config);
    FakeDirect.made.push(this);
  }
  addTrack(t: FakeTrack): void {
    this.added.push(t);
  }
  getTransceivers(): unknown[] {
    return this.added.map((t) => ({ receiver: { track: { kind: t.kind } }, setCodecPreferences: () => {} }));
  }
  getSenders(): unknown[] {
    return [];
  }
  candidate(c: string): void {
    this.onicecandidate?.({
      candidate: { candidate: c, sdpMid: '0', sdpMLineIndex: 0, toJSON: () => ({ candidate: c, sdpMid: '0', sdpMLineIndex: 0 }) },
    });
  }
}

function setup() {
  const clock = new FakeClock();
  FakePeerConnection.created = [];
  FakeDirect.made = [];
  let socket: FakeWebSocket | null = null;
  const local = new FakeStream('local', [new FakeTrack('audio', 'mic'), new FakeTrack('video', 'cam')]);
  const conf = new Conference({
    room: 'r',
    name: 'Ann',
    url: 'ws://x/ws',
    localStream: asStream(local),
    clock,
    createWebSocket: (url) => (socket = new FakeWebSocket(url)),
    createPeerConnection: (cfg) => new FakePeerConnection(cfg),
    createDirectConnection: (cfg) => new FakeDirect(cfg) as unknown as RTCPeerConnection,
    logger: silent,
  });
  const shown: string[] = [];
  conf.on('track-added', (e: ConferenceEvents['track-added']) => shown.push(`+${e.kind} ${e.track.id}`));
  conf.on('track-removed', (e: ConferenceEvents['track-removed']) => shown.push(`-${e.kind} ${e.track.id}`));
  const ws = () => socket as FakeWebSocket;
  return { conf, clock, ws, shown };
}

describe('hybrid P2P in Conference', () => {
  it('shows the direct media once it plays, hides the SFU meanwhile, and goes back without a gap', async () => {
    const t = setup();
    t.conf.join();
    t.ws().open();
    t.ws().receive({
      type: 'welcome',
      version: 1,
      id: 'pA',
      room: 'r',
      resume: { id: 'pA', secret: 's' },
      participants: [bob],
      iceServers: [{ urls: ['turn:127.0.0.1:3478'], username: 'u', credential: 'c' }],
    });
    await flush();
    const sub = FakePeerConnection.created[1] as FakePeerConnection;
    const sfuVideo = new FakeTrack('video', 'sfu-v');
    const sfuAudio = new FakeTrack('audio', 'sfu-a');
    const bobStream = new FakeStream('pB', [sfuVideo, sfuAudio]);
    sub.fireTrack(sfuVideo, [bobStream]);
    sub.fireTrack(sfuAudio, [bobStream]);
    expect(t.shown).toEqual(['+video sfu-v', '+audio sfu-a']);

    // P2P on: the direct connection uses welcome's ICE servers (TURN included) and offers.
    t.ws().receive({ type: 'p2p', on: true, epoch: 1, peer: 'pB', initiator: true });
    await flush();
    const d = FakeDirect.made[0] as FakeDirect;
    expect(d.config.iceServers).toEqual([{ urls: ['turn:127.0.0.1:3478'], username: 'u', credential: 'c' }]);
    expect(d.added.map((x) => x.id)).toEqual(['mic', 'cam']);
    expect(t.ws().sentOfType('p2p-offer')).toEqual([{ type: 'p2p-offer', to: 'pB', epoch: 1, sdp: expect.any(String) }]);
    d.candidate('candidate:1 1 udp 1 192.0.2.1 5000 typ host');
    expect(t.ws().sentOfType('p2p-candidate')[0]).toMatchObject({ to: 'pB', epoch: 1, candidate: { candidate: expect.stringContaining('192.0.2.1') } });
    // Relayed signaling of another epoch or from someone else is ignored.
    t.ws().receive({ type: 'p2p-answer', from: 'pX', epoch: 1, sdp: 'v=0 wrong' });
    t.ws().receive({ type: 'p2p-answer', from: 'pB', epoch: 0, sdp: 'v=0 stale' });
    t.ws().receive({ type: 'p2p-answer', from: 'pB', epoch: 1, sdp: 'v=0 answer' });
    t.ws().receive({ type: 'p2p-candidate', from: 'pB', epoch: 1, candidate: { candidate: 'candidate:2 1 udp 1 192.0.2.2 6000 typ host', sdpMid: '0' } });
    await flush();
    expect(d.remoteDescriptions).toEqual([{ type: 'answer', sdp: 'v=0 answer' }]);
    expect(d.addedCandidates).toHaveLength(1);

    // Connected, but nothing decoded yet: still the SFU's media.
    const dVideo = new FakeTrack('video', 'p2p-v');
    const dAudio = new FakeTrack('audio', 'p2p-a');
    d.fireTrack(dVideo, [new FakeStream('remote')]);
    d.fireTrack(dAudio, [new FakeStream('remote')]);
    d.setState('connected');
    d.stats = [{ type: 'inbound-rtp', kind: 'video', trackIdentifier: 'p2p-v', framesDecoded: 1, packetsReceived: 10 }];
    t.clock.advance(100);
    await flush();
    expect(t.shown).toHaveLength(2);
    expect(t.ws().sentOfType('p2p-state')).toEqual([]);
    d.stats = [{ type: 'inbound-rtp', kind: 'video', trackIdentifier: 'p2p-v', framesDecoded: 3, packetsReceived: 30 }];
    t.clock.advance(100);
    await flush();
    expect(t.shown.slice(2)).toEqual(['+video p2p-v', '+audio p2p-a']);
    expect(t.ws().sentOfType('p2p-state')).toEqual([{ type: 'p2p-state', epoch: 1, state: 'connected' }]);
    expect(t.conf.p2p.phase).toBe('direct');
    expect(t.conf.tracks('pB').video?.track.id).toBe('p2p-v');
    const stats = await t.conf.stats();
    expect(stats.inbound.map((r) => `${r.participantId} ${r.kind} ${r.trackId}`)).toEqual(['pB video p2p-v']);

    // The SFU's track of Bob changes meanwhile: not shown over the direct one.
    const sfuVideo2 = new FakeTrack('video', 'sfu-v2');
    bobStream.addTrack(sfuVideo2);
    sub.fireTrack(sfuVideo2, [bobStream]);
    expect(t.shown).toHaveLength(4);

    // P2P off: the direct media stays until the SFU's decodes again, then the SFU's, then close.
    sub.stats = [{ type: 'inbound-rtp', kind: 'video', trackIdentifier: 'sfu-v2', framesDecoded: 50, packetsReceived: 500 }];
    t.ws().receive({ type: 'p2p', on: false, epoch: 1, reason: 'size' });
    await flush();
    t.clock.advance(100);
    await flush();
    expect(t.shown).toHaveLength(4);
    expect(d.closed).toBe(false);
    expect(t.conf.p2p.phase).toBe('leaving');
    sub.stats = [{ type: 'inbound-rtp', kind: 'video', trackIdentifier: 'sfu-v2', framesDecoded: 53, packetsReceived: 530 }];
    t.clock.advance(100);
    await flush();
    expect(t.shown.slice(4)).toEqual(['+video sfu-v2', '+audio sfu-a']);
    expect(t.conf.p2p.phase).toBe('off');
    expect(t.conf.p2pPeerConnection).toBeNull();
    // Closed a little later: its track may still be on screen until the SFU's first frame there.
    expect(d.closed).toBe(false);
    t.clock.advance(1500);
    expect(d.closed).toBe(true);
  });

  it('a direct connection that does not play within 10 s is reported failed and closed', async () => {
    const t = setup();
    t.conf.join();
    t.ws().open();
    t.ws().receive({ type: 'welcome', version: 1, id: 'pB', room: 'r', resume: { id: 'pB', secret: 's' }, participants: [{ ...bob, id: 'pA' }], iceServers: [] });
    await flush();
    t.ws().receive({ type: 'p2p', on: true, epoch: 4, peer: 'pA' });
    await flush();
    expect(t.ws().sentOfType('p2p-offer')).toEqual([]); // the responder waits for the offer
    t.clock.advance(10_000);
    await flush();
    expect(t.ws().sentOfType('p2p-state')).toEqual([{ type: 'p2p-state', epoch: 4, state: 'failed' }]);
    expect((FakeDirect.made[0] as FakeDirect).closed).toBe(true);
    expect(t.shown).toEqual([]);
  });
});
