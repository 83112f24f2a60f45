import { describe, expect, it } from 'vitest';
import { Conference, SCREEN_ENCODING, type ConferenceEvents } from '../src/protocol';
import type { Participant } from '../src/protocol/messages';
import { asStream, FakeClock, FakePeerConnection, FakeStream, FakeTrack, FakeWebSocket, flush } from './fakes';
import { chooseStage } from '../src/ui/layout';
import { shareTileOf } from '../src/ui/share';

const bob: Participant = { id: 'pB', name: 'Bob', audioMuted: false, videoMuted: false };

function setup() {
  FakePeerConnection.created = [];
  const clock = new FakeClock();
  const sockets: FakeWebSocket[] = [];
  const local = new FakeStream('local', [new FakeTrack('audio', 'mic'), new FakeTrack('video', 'cam')]);
  const conf = new Conference({
    room: 'r',
    name: 'Alice',
    url: 'ws://127.0.0.1/ws',
    localStream: asStream(local),
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
  const ws = () => sockets[sockets.length - 1] as FakeWebSocket;
  const pub = () => FakePeerConnection.created[FakePeerConnection.created.length - 2] as FakePeerConnection;
  const offers = () => ws().sentOfType('offer');
  const answer = async () => {
    ws().receive({ type: 'answer', pc: 'publish', sdp: 'answer' });
    await flush();
  };
  const connect = async () => {
    conf.join();
    ws().open();
    ws().receive({
      type: 'welcome',
      version: 1,
      id: 'pA',
      room: 'r',
      resume: { id: 'pA', secret: 's' },
      participants: [bob],
      iceServers: [],
    });
    await flush();
  };
  const screen = new FakeStream('screen', [new FakeTrack('video', 'screen-v'), new FakeTrack('audio', 'screen-a')]);
  return { conf, clock, ws, pub, offers, answer, connect, screen };
}

describe('screen sharing', () => {
  it('publishes the share on transceivers of its own, named in the next publish offer', async () => {
    const t = setup();
    const shares: ConferenceEvents['screen-share'][] = [];
    t.conf.on('screen-share', (e) => shares.push(e));
    await t.connect();
    expect(t.offers()).toHaveLength(1);
    expect(t.offers()[0]?.['screenMids']).toBeUndefined();

    t.conf.startScreenShare(asStream(t.screen));
    expect(shares).toEqual([{ sharing: true }]);
    const added = t.pub().transceivers.slice(2);
    expect(added.map((x) => (x.trackOrKind as FakeTrack).id)).toEqual(['screen-v', 'screen-a']);
    expect(added[0]?.init?.sendEncodings).toEqual([SCREEN_ENCODING]);
    // One publish offer at a time: the share's waits for the first answer.
    await flush();
    expect(t.offers()).toHaveLength(1);
    await t.answer();
    expect(t.offers()).toHaveLength(2);
    expect(t.offers()[1]?.['screenMids']).toEqual(['2', '3']);

    t.conf.stopScreenShare();
    expect(t.conf.screenShare).toBeNull();
    expect(shares).toEqual([{ sharing: true }, { sharing: false }]);
    await t.answer();
    expect(t.offers()).toHaveLength(3);
    expect(t.offers()[2]?.['screenMids']).toBeUndefined();
  });

  it('ends a share the server refuses and takes its offer back', async () => {
    const t = setup();
    const shares: ConferenceEvents['screen-share'][] = [];
    t.conf.on('screen-share', (e) => shares.push(e));
    await t.connect();
    await t.answer();
    t.conf.startScreenShare(asStream(t.screen));
    await flush();
    expect(t.offers()).toHaveLength(2);
    t.ws().receive({ type: 'error', code: 'too-many-tracks', message: 'at most 2', fatal: false });
    await flush();
    expect(t.conf.screenShare).toBeNull();
    expect(shares).toEqual([{ sharing: true }, { sharing: false }]);
    expect(t.pub().localDescriptions.map((d) => d.type)).toEqual(['offer', 'offer', 'rollback', 'offer']);
    expect(t.offers()[2]?.['screenMids']).toBeUndefined();
    // The session goes on: the next share is offered once that offer is answered.
    await t.answer();
    t.conf.startScreenShare(asStream(t.screen));
    await flush();
    expect(t.offers()).toHaveLength(4);
    expect(t.offers()[3]?.['screenMids']).toEqual(['4', '5']);
  });

  it('shares again in the publish connection of a new session', async () => {
    const t = setup();
    await t.connect();
    t.conf.startScreenShare(asStream(t.screen));
    await t.answer();
    t.ws().serverClose();
    await flush();
    // Reconnect after the backoff: the new publish connection carries the share from its first offer.
    t.clock.advance(5000);
    t.ws().open();
    t.ws().receive({
      type: 'welcome',
      version: 1,
      id: 'pA',
      room: 'r',
      resume: { id: 'pA', secret: 's' },
      participants: [bob],
      iceServers: [],
    });
    await flush();
    expect(t.pub().transceivers).toHaveLength(4);
    expect(t.offers()[0]?.['screenMids']).toEqual(['2', '3']);
  });

  it("forgets a remote share's pin, constraints and tracks when it ends", async () => {
    const t = setup();
    const updated: Participant[] = [];
    t.conf.on('participant-updated', (e) => updated.push(e.participant));
    await t.connect();
    t.ws().receive({ type: 'participant-updated', participant: { ...bob, screen: 'pB-screen' } });
    const sub = FakePeerConnection.created[FakePeerConnection.created.length - 1] as FakePeerConnection;
    const stream = new FakeStream('pB-screen', [new FakeTrack('video', 'video-pB-screen')]);
    sub.fireTrack(stream.getVideoTracks()[0] as FakeTrack, [stream], '5');
    t.conf.pin('pB-screen');
    t.conf.setConstraints({ 'pB-screen': { width: 1280, height: 720, role: 'stage' } });
    expect(t.conf.tracks('pB-screen').video).toBeDefined();

    t.ws().receive({ type: 'participant-updated', participant: bob });
    expect(updated.map((p) => p.screen)).toEqual(['pB-screen', undefined]);
    expect(t.conf.tracks('pB-screen').video).toBeUndefined();
    expect(t.conf.pinned).toEqual([]);
    expect(t.conf.constraints).toEqual({});
  });
});

describe('screen share on the page', () => {
  it('gives a sharing participant a second tile', () => {
    expect(shareTileOf({ ...bob, screen: 'pB-screen' })).toEqual({
      id: 'pB-screen',
      name: 'Bob — screen',
      audioMuted: false,
      videoMuted: false,
    });
    expect(shareTileOf(bob)).toBeNull();
  });

  it('puts what the room has on stage before the speaker, after the user\'s pins', () => {
    const base = { previous: null, speaker: 'pC', self: 'pA', present: ['pB', 'pC', 'pB-screen'], forwarded: ['pB-screen', 'pC', 'pB'] };
    expect(chooseStage({ ...base, onStage: ['pB-screen'] })).toBe('pB-screen');
    expect(chooseStage({ ...base, onStage: ['pB-screen'], pinned: ['pC'] })).toBe('pC');
    expect(chooseStage({ ...base, onStage: [] })).toBe('pC');
    // Not received (Last N): the speaker keeps the stage.
    expect(chooseStage({ ...base, onStage: ['pB-screen'], forwarded: ['pC'] })).toBe('pC');
  });
});
