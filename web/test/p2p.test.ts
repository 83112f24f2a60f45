import { describe, expect, it } from 'vitest';
import { parseServerMessage } from '../src/protocol/messages';
import {
  P2P_OFF,
  p2pAudioCodecs,
  p2pEncoding,
  p2pStep,
  p2pVideoCodecs,
  playing,
  withOpusFec,
  type P2PInput,
  type P2PState,
} from '../src/protocol/p2p';

/** Runs inputs from a state and returns every state and the actions, in order. */
function run(from: P2PState, inputs: P2PInput[]): { state: P2PState; actions: string[] } {
  let state = from;
  const actions: string[] = [];
  for (const input of inputs) {
    const step = p2pStep(state, input);
    state = step.state;
    for (const a of step.actions) {
      switch (a.type) {
        case 'open':
          actions.push(`open ${a.epoch} ${a.peer}${a.initiator ? ' initiator' : ''}`);
          break;
        case 'report':
          actions.push(`report ${a.epoch} ${a.state}`);
          break;
        case 'render':
          actions.push(`render ${a.via}`);
          break;
        case 'await-sfu':
          actions.push('await-sfu');
          break;
        case 'close':
          actions.push('close');
          break;
      }
    }
  }
  return { state, actions };
}

const on = (epoch: number, initiator = true): P2PInput => ({ type: 'mode-on', epoch, peer: 'bob', initiator });

describe('p2p state machine', () => {
  it('opens on p2p on, shows the direct media once it plays, and reports connected', () => {
    const r = run(P2P_OFF, [on(1), { type: 'direct-media' }]);
    expect(r.state).toEqual({ phase: 'direct', epoch: 1, peer: 'bob', initiator: true });
    expect(r.actions).toEqual(['open 1 bob initiator', 'render p2p', 'report 1 connected']);
  });

  it('leaves seamlessly: keeps the direct media until the SFU plays, then shows it and closes', () => {
    const direct = run(P2P_OFF, [on(1), { type: 'direct-media' }]).state;
    const leaving = run(direct, [{ type: 'mode-off', epoch: 1 }]);
    expect(leaving.state.phase).toBe('leaving');
    expect(leaving.actions).toEqual(['await-sfu']); // nothing closed, nothing re-rendered yet
    const back = run(leaving.state, [{ type: 'sfu-media' }]);
    expect(back.state.phase).toBe('off');
    // SFU first, then close: the picture never goes away.
    expect(back.actions).toEqual(['render sfu', 'close']);
  });

  it('a failure while connecting reports it and stays on the SFU without re-rendering', () => {
    const r = run(P2P_OFF, [on(1), { type: 'failed' }]);
    expect(r.state.phase).toBe('off');
    expect(r.actions).toEqual(['open 1 bob initiator', 'report 1 failed', 'close']);
  });

  it('a failure while direct goes back to the SFU at once (the direct media is gone)', () => {
    const r = run(P2P_OFF, [on(1), { type: 'direct-media' }, { type: 'failed' }]);
    expect(r.state.phase).toBe('off');
    expect(r.actions.slice(3)).toEqual(['report 1 failed', 'render sfu', 'close']);
  });

  it('p2p off while connecting closes without any rendering', () => {
    const r = run(P2P_OFF, [on(1, false), { type: 'mode-off', epoch: 1 }]);
    expect(r.state.phase).toBe('off');
    expect(r.actions).toEqual(['open 1 bob', 'close']);
  });

  it('ignores stale and repeated messages', () => {
    const direct = run(P2P_OFF, [on(2), { type: 'direct-media' }]).state;
    expect(run(direct, [on(2)]).actions).toEqual([]);
    expect(run(direct, [on(1)]).actions).toEqual([]);
    expect(run(direct, [{ type: 'mode-off', epoch: 1 }]).state.phase).toBe('direct');
    expect(run(direct, [{ type: 'direct-media' }]).actions).toEqual([]);
    expect(run(direct, [{ type: 'sfu-media' }]).actions).toEqual([]);
    expect(run(P2P_OFF, [{ type: 'mode-off', epoch: 5 }, { type: 'failed' }]).actions).toEqual([]);
  });

  it('a new epoch while leaving shows the SFU, closes the old connection and opens the new one', () => {
    const leaving = run(P2P_OFF, [on(1), { type: 'direct-media' }, { type: 'mode-off', epoch: 1 }]).state;
    const r = run(leaving, [on(2, false)]);
    expect(r.state).toEqual({ phase: 'connecting', epoch: 2, peer: 'bob', initiator: false });
    expect(r.actions).toEqual(['render sfu', 'close', 'open 2 bob']);
  });

  it('a lost session closes everything and forgets the epoch', () => {
    const r = run(P2P_OFF, [on(3), { type: 'direct-media' }, { type: 'session-lost' }]);
    expect(r.state).toEqual(P2P_OFF);
    expect(r.actions.slice(3)).toEqual(['render sfu', 'close']);
    // The next session's epoch 1 is new again.
    expect(run(r.state, [on(1)]).actions).toEqual(['open 1 bob initiator']);
  });

  it('never shows the direct media before it plays, whatever the order of inputs', () => {
    const inputs: P2PInput[] = [
      on(1),
      { type: 'mode-off', epoch: 1 },
      { type: 'sfu-media' },
      { type: 'failed' },
      on(2),
      { type: 'session-lost' },
      { type: 'direct-media' },
    ];
    // Every permutation of a few inputs: 'render p2p' only ever follows direct-media in connecting.
    const perms = (xs: P2PInput[]): P2PInput[][] =>
      xs.length <= 1 ? [xs] : xs.flatMap((x, i) => perms([...xs.slice(0, i), ...xs.slice(i + 1)]).map((p) => [x, ...p]));
    for (const seq of perms(inputs.slice(0, 6))) {
      let state = P2P_OFF;
      let open = false;
      for (const input of seq) {
        const step = p2pStep(state, input);
        for (const a of step.actions) {
          if (a.type === 'open') {
            expect(open).toBe(false); // one direct connection at a time
            open = true;
          }
          if (a.type === 'close') open = false;
          if (a.type === 'render' && a.via === 'p2p') expect(input.type).toBe('direct-media');
        }
        state = step.state;
        expect(open).toBe(state.phase !== 'off');
      }
    }
  });
});

describe('p2p media settings', () => {
  it('one encoding, at most 720 lines and 2.5 Mb/s', () => {
    expect(p2pEncoding(1080)).toEqual({ active: true, maxBitrate: 2_500_000, scaleResolutionDownBy: 1.5 });
    expect(p2pEncoding(720).scaleResolutionDownBy).toBe(1);
    expect(p2pEncoding(180).scaleResolutionDownBy).toBe(1);
    expect(p2pEncoding(0).scaleResolutionDownBy).toBe(1);
  });

  it('prefers VP9, then H.264, then VP8; keeps RTX and the rest after them', () => {
    const c = (mimeType: string) => ({ mimeType, clockRate: 90000 });
    const order = p2pVideoCodecs([c('video/VP8'), c('video/rtx'), c('video/H264'), c('video/VP9'), c('video/AV1'), c('video/H264')]);
    expect(order.map((x) => x.mimeType)).toEqual(['video/VP9', 'video/H264', 'video/H264', 'video/VP8', 'video/rtx', 'video/AV1']);
  });

  it('prefers RED, then Opus', () => {
    const c = (mimeType: string) => ({ mimeType, clockRate: 48000 });
    expect(p2pAudioCodecs([c('audio/opus'), c('audio/G722'), c('audio/red')]).map((x) => x.mimeType)).toEqual([
      'audio/red',
      'audio/opus',
      'audio/G722',
    ]);
  });

  it('turns on Opus in-band FEC in an SDP', () => {
    const plain = 'm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\na=fmtp:111 minptime=10\r\n';
    expect(withOpusFec(plain)).toContain('a=fmtp:111 minptime=10;useinbandfec=1');
    const on = withOpusFec(plain);
    expect(withOpusFec(on)).toBe(on);
    const bare = 'a=rtpmap:111 opus/48000/2\r\n';
    expect(withOpusFec(bare)).toContain('a=fmtp:111 useinbandfec=1');
    expect(withOpusFec('m=video 9 UDP/TLS/RTP/SAVPF 96\r\n')).toBe('m=video 9 UDP/TLS/RTP/SAVPF 96\r\n');
  });

  it('plays: two new frames for video, new packets for audio only', () => {
    expect(playing(null, { framesDecoded: 2, packetsReceived: 10 }, true)).toBe(true);
    expect(playing({ framesDecoded: 100, packetsReceived: 0 }, { framesDecoded: 101, packetsReceived: 50 }, true)).toBe(false);
    expect(playing({ framesDecoded: 100, packetsReceived: 0 }, { framesDecoded: 102, packetsReceived: 50 }, true)).toBe(true);
    expect(playing({ framesDecoded: 0, packetsReceived: 5 }, { framesDecoded: 0, packetsReceived: 6 }, false)).toBe(true);
    expect(playing(null, null, false)).toBe(false);
  });
});

describe('p2p messages', () => {
  it('parses p2p and the relayed signaling', () => {
    expect(parseServerMessage('{"type":"p2p","on":true,"epoch":1,"peer":"p2","initiator":true}')).toEqual({
      type: 'p2p',
      on: true,
      epoch: 1,
      peer: 'p2',
      initiator: true,
    });
    expect(parseServerMessage('{"type":"p2p","on":false,"epoch":1,"reason":"size"}')).toEqual({
      type: 'p2p',
      on: false,
      epoch: 1,
      reason: 'size',
    });
    expect(parseServerMessage('{"type":"p2p-offer","from":"p1","epoch":1,"sdp":"v=0"}')).toEqual({
      type: 'p2p-offer',
      from: 'p1',
      epoch: 1,
      sdp: 'v=0',
    });
    // A missing candidate is the end of candidates (the server omits null).
    expect(parseServerMessage('{"type":"p2p-candidate","from":"p1","epoch":1}')).toEqual({
      type: 'p2p-candidate',
      from: 'p1',
      epoch: 1,
      candidate: null,
    });
    expect(parseServerMessage('{"type":"p2p","on":true,"epoch":1}')).toBeUndefined(); // on without a peer
    expect(parseServerMessage('{"type":"p2p-answer","from":"p1","epoch":1}')).toBeUndefined(); // no sdp
    expect(parseServerMessage('{"type":"p2p-offer","epoch":1,"sdp":"v=0"}')).toBeUndefined(); // no from
  });
});
