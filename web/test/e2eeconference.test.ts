import { describe, expect, it } from 'vitest';
import { Conference } from '../src/protocol';
import type { EndToEnd } from '../src/protocol/e2ee/client';
import { passphraseFromHash } from '../src/protocol/e2ee/client';
import type { Participant } from '../src/protocol/messages';
import { asStream, asTrack, FakeClock, FakePeerConnection, FakeStream, FakeTrack, FakeWebSocket, flush } from './fakes';

class RecordingE2ee implements EndToEnd {
  readonly peerConfig = { encodedInsertableStreams: true };
  readonly calls: unknown[][] = [];
  setSelf(id: string): void {
    this.calls.push(['self', id]);
  }
  sender(_sender: unknown, kind: string): void {
    this.calls.push(['sender', kind]);
  }
  receiver(receiver: unknown, kind: string, owner: string, encrypted: boolean): void {
    this.calls.push(['receiver', (receiver as { name: string }).name, kind, owner, encrypted]);
  }
  rotate(): void {
    this.calls.push(['rotate']);
  }
}

const ann: Participant = { id: 'pB', name: 'Ann', audioMuted: false, videoMuted: false, e2ee: true };
const cid: Participant = { id: 'pC', name: 'Cid', audioMuted: false, videoMuted: false };

function start(e2ee?: EndToEnd) {
  FakePeerConnection.created = [];
  const sockets: FakeWebSocket[] = [];
  const local = new FakeStream('local', [new FakeTrack('audio', 'mic'), new FakeTrack('video', 'cam')]);
  const conf = new Conference({
    room: 'r',
    name: 'Me',
    url: 'ws://x/ws',
    localStream: asStream(local),
    clock: new FakeClock(),
    createWebSocket: (url) => {
      const ws = new FakeWebSocket(url);
      sockets.push(ws);
      return ws;
    },
    createPeerConnection: (cfg) => new FakePeerConnection(cfg),
    logger: { debug: () => {}, warn: () => {} },
    ...(e2ee ? { e2ee } : {}),
  });
  conf.join();
  const ws = sockets[0]!;
  ws.open();
  ws.receive({ type: 'welcome', version: 1, id: 'pA', room: 'r', resume: { id: 'pA', secret: 's' }, participants: [ann], iceServers: [] });
  return { conf, ws };
}

function track(pc: FakePeerConnection, kind: 'audio' | 'video', stream: string, receiver: string): void {
  const t = new FakeTrack(kind, `${kind}-${stream}`);
  pc.ontrack?.({ track: asTrack(t), streams: [asStream(new FakeStream(stream, [t]))], transceiver: { mid: null }, receiver: { name: receiver } });
}

describe('Conference with end-to-end encryption', () => {
  it('announces it, transforms every sender and receiver, binds receivers to their owner and rotates on leave', async () => {
    const e = new RecordingE2ee();
    const { ws } = start(e);
    await flush();
    const join = ws.sent[0]!;
    expect(join["e2ee"]).toBe(true);
    expect(join['audioSlots']).toBeUndefined(); // slots would change a receiver's sender under its decryptor
    const [pub, sub] = FakePeerConnection.created;
    expect(pub!.config).toMatchObject({ encodedInsertableStreams: true });
    expect(e.calls.slice(0, 3)).toEqual([['self', 'pA'], ['sender', 'audio'], ['sender', 'video']]);

    track(sub!, 'video', 'pB', 'r1');
    track(sub!, 'video', 'pX', 'r2'); // not known yet: counts as encrypting
    track(sub!, 'audio', 'pC', 'r3');
    ws.receive({ type: 'participant-joined', participant: cid }); // pC known: not encrypting
    ws.receive({ type: 'participant-joined', participant: { ...cid, id: 'pX', name: 'X' } });
    expect(e.calls.slice(3)).toEqual([
      ['receiver', 'r1', 'video', 'pB', true],
      ['receiver', 'r2', 'video', 'pX', true],
      ['receiver', 'r3', 'audio', 'pC', true],
      ['receiver', 'r3', 'audio', 'pC', false],
      ['receiver', 'r2', 'video', 'pX', false],
    ]);
    ws.receive({ type: 'participant-left', id: 'pC' });
    expect(e.calls.at(-1)).toEqual(['rotate']);
  });

  it('without it: no e2ee in join, no extra configuration', async () => {
    const { ws } = start();
    await flush();
    expect(ws.sent[0]!["e2ee"]).toBeUndefined();
    expect(Object.keys(FakePeerConnection.created[0]!.config)).toEqual(['iceServers']);
  });

  it('reads the passphrase from #e2ee=', () => {
    expect(passphraseFromHash('#e2ee=correct%20horse')).toBe('correct horse');
    expect(passphraseFromHash('#e2ee=')).toBeNull();
    expect(passphraseFromHash('')).toBeNull();
    expect(passphraseFromHash('#other=1')).toBeNull();
  });
});
