// Chat, raised hands and device switching in the protocol library.
import { beforeEach, describe, expect, it } from 'vitest';
import { ChatLog, Conference, MaxChatChars, chatTextProblem, parseServerMessage, type ChatEntry } from '../src/protocol';
import { asStream, asTrack, FakeClock, FakePeerConnection, FakeStream, FakeTrack, FakeWebSocket, flush } from './fakes';

const silent = { debug: () => {}, warn: () => {} };

function setup() {
  const sockets: FakeWebSocket[] = [];
  FakePeerConnection.created = [];
  const mic = new FakeTrack('audio', 'mic-1');
  const cam = new FakeTrack('video', 'cam-1');
  cam.settings = { width: 1280, height: 720 };
  const local = new FakeStream('local-stream', [mic, cam]);
  const conf = new Conference({
    room: 'standup',
    name: 'Alice',
    url: 'ws://127.0.0.1/ws',
    localStream: asStream(local),
    clock: new FakeClock(),
    createWebSocket: (url) => {
      const ws = new FakeWebSocket(url);
      sockets.push(ws);
      return ws;
    },
    createPeerConnection: (cfg) => new FakePeerConnection(cfg),
    senderCodecs: () => [{ mimeType: 'video/VP8', clockRate: 90000 }],
    logger: silent,
  });
  const ws = () => sockets[sockets.length - 1] as FakeWebSocket;
  const welcome = (participants: unknown[] = []) =>
    ws().receive({ type: 'welcome', version: 1, id: 'pA', room: 'standup', resume: { id: 'pA', secret: 's' }, participants, iceServers: [] });
  const connect = async (participants: unknown[] = []) => {
    conf.join();
    ws().open();
    welcome(participants);
    await flush();
  };
  return { conf, sockets, ws, welcome, connect, mic, cam, local };
}

const entry = (seq: number, text = `m${seq}`): ChatEntry => ({ seq, from: 'pB', name: 'Bob', text, time: 1_700_000_000_000 + seq });

beforeEach(() => {
  FakePeerConnection.created = [];
});

describe('chat', () => {
  it('parses chat and chat-history, dropping malformed entries', () => {
    expect(parseServerMessage(JSON.stringify({ type: 'chat', ...entry(1, '<b>x</b>') }))).toEqual({ type: 'chat', ...entry(1, '<b>x</b>') });
    expect(parseServerMessage(JSON.stringify({ type: 'chat', seq: 1, from: 'pB', name: 'Bob', time: 5 }))).toBeUndefined();
    expect(parseServerMessage(JSON.stringify({ type: 'chat-history', messages: [entry(1), { seq: 'x' }, entry(2)] }))).toEqual({
      type: 'chat-history',
      messages: [entry(1), entry(2)],
    });
    expect(parseServerMessage('{"type":"chat-history","messages":null}')).toEqual({ type: 'chat-history', messages: [] });
    expect(parseServerMessage('{"type":"chat-history","messages":{}}')).toBeUndefined();
  });

  it('posts text, refuses what the server would, and keeps the room log without duplicates', async () => {
    const t = setup();
    expect(t.conf.sendChat('early')).toBe('not connected');
    await t.connect();
    const events: string[] = [];
    t.conf.on('chat', ({ message }) => events.push(`chat ${message.seq}`));
    t.conf.on('chat-history', ({ messages }) => events.push(`history ${messages.map((m) => m.seq).join(',')}`));
    t.ws().receive({ type: 'chat-history', messages: [entry(1), entry(2)] });
    expect(t.conf.sendChat('hello <script>')).toBe('');
    expect(t.conf.sendChat('   ')).toBe('empty');
    expect(t.conf.sendChat('x'.repeat(MaxChatChars + 1))).toMatch(/too long/);
    expect(t.conf.sendChat('é'.repeat(MaxChatChars))).toBe('');
    expect(t.ws().sentOfType('chat').map((m) => (m['text'] as string).length)).toEqual([14, MaxChatChars]);
    t.ws().receive({ type: 'chat', ...entry(3) });
    t.ws().receive({ type: 'chat', ...entry(3) }); // a duplicate is not news
    expect(events).toEqual(['history 1,2', 'chat 3']);
    // A reconnect's history replaces the log: what was missed arrives, nothing twice.
    t.ws().serverClose();
    await flush();
    expect(t.conf.sendChat('while away')).toBe('not connected');
    t.sockets.length = 0;
    // (the reconnect timer is faked: open a new session by hand)
    (t.conf as unknown as { openSession(): void }).openSession();
    t.ws().open();
    t.welcome();
    t.ws().receive({ type: 'chat-history', messages: [entry(2), entry(3), entry(4)] });
    expect(t.conf.chat.map((m) => m.seq)).toEqual([1, 2, 3, 4]);
  });

  it('checks text as the server does', () => {
    expect(chatTextProblem('a\n\tb')).toBe('');
    expect(chatTextProblem('a\u0007b')).toBe('control characters');
    expect(chatTextProblem('😀'.repeat(MaxChatChars))).toBe(''); // code points, not UTF-16 units
  });

  it('bounds the log', () => {
    const log = new ChatLog();
    for (let i = 1; i <= 600; i++) log.add(entry(i));
    expect(log.messages.length).toBe(500);
    expect(log.messages[0]?.seq).toBe(101);
    log.replace([]);
    expect(log.messages).toEqual([]);
  });
});

describe('raise hand', () => {
  it('sends raise-hand, restates it after a reconnect, and relays others’ hands', async () => {
    const t = setup();
    t.conf.raiseHand(true); // before joining: sent once welcomed
    await t.connect([{ id: 'pB', name: 'Bob', audioMuted: false, videoMuted: false }]);
    expect(t.ws().sentOfType('raise-hand')).toEqual([{ type: 'raise-hand', raised: true }]);
    expect(t.conf.localState.handRaised).toBe(true);
    const updates: boolean[] = [];
    t.conf.on('participant-updated', ({ participant }) => updates.push(participant.handRaised === true));
    t.ws().receive({ type: 'participant-updated', participant: { id: 'pB', name: 'Bob', audioMuted: false, videoMuted: false, handRaised: true } });
    t.ws().receive({ type: 'participant-updated', participant: { id: 'pB', name: 'Bob', audioMuted: false, videoMuted: false } });
    expect(updates).toEqual([true, false]);
    t.conf.raiseHand(false);
    t.conf.raiseHand(false);
    expect(t.ws().sentOfType('raise-hand')).toEqual([
      { type: 'raise-hand', raised: true },
      { type: 'raise-hand', raised: false },
    ]);
  });
});

describe('device switch', () => {
  it('replaces the camera and microphone with replaceTrack: no new offer, join or peer connection', async () => {
    const t = setup();
    await t.connect();
    const [pub] = FakePeerConnection.created;
    if (!pub) throw new Error('no publish connection');
    const [audioT, videoT] = pub.transceivers;
    if (!audioT || !videoT) throw new Error('no transceivers');
    const encodingsBefore = videoT.sender.getParameters().encodings.map((e) => e.rid);
    expect(encodingsBefore).toEqual(['q', 'h', 'f']);
    const sent = () => t.ws().sent.map((m) => m['type']).filter((x) => x === 'offer' || x === 'join');
    const before = { sent: sent(), pcs: FakePeerConnection.created.length, offers: pub.localDescriptions.length, sockets: t.sockets.length };

    const cam2 = new FakeTrack('video', 'cam-2');
    cam2.settings = { width: 1280, height: 720 };
    const old = await t.conf.replaceLocalTrack(asTrack(cam2));
    const mic2 = new FakeTrack('audio', 'mic-2');
    t.conf.mute(true, false);
    const oldMic = await t.conf.replaceLocalTrack(asTrack(mic2));
    await flush();

    expect(old).toBe(asTrack(t.cam));
    expect(oldMic).toBe(asTrack(t.mic));
    expect(videoT.sender.replaced).toEqual([cam2]);
    expect(audioT.sender.replaced).toEqual([mic2]);
    expect(mic2.enabled).toBe(false); // the mute state carries over to the new device
    expect(t.local.getVideoTracks()).toEqual([cam2]);
    expect(t.local.getAudioTracks()).toEqual([mic2]);
    // Same session: no offer, no join, no new connection; simulcast encodings kept.
    expect({ sent: sent(), pcs: FakePeerConnection.created.length, offers: pub.localDescriptions.length, sockets: t.sockets.length }).toEqual(before);
    expect(videoT.sender.getParameters().encodings.map((e) => e.rid)).toEqual(encodingsBefore);
    expect(t.conf.id).toBe('pA');
  });

  it('turns encodings on for the new capture size', async () => {
    const t = setup();
    await t.connect();
    const videoT = FakePeerConnection.created[0]?.transceivers[1];
    if (!videoT) throw new Error('no video transceiver');
    t.ws().receive({ type: 'answer', pc: 'publish', sdp: 'answer' });
    await flush();
    expect(videoT.sender.active).toEqual([true, true, true]);
    const small = new FakeTrack('video', 'cam-small');
    small.settings = { width: 320, height: 180 };
    await t.conf.replaceLocalTrack(asTrack(small));
    await flush();
    // A 320x180 capture: libwebrtc would send only the ¼ layer with all three on.
    expect(videoT.sender.active).toEqual([false, false, true]);
  });
});
