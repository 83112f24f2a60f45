import { webcrypto } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  clearBytes,
  decodeHeader,
  encodeHeader,
  openFrame,
  sealFrame,
  TAG_BYTES,
} from '../src/protocol/e2ee/frame';
import { ReceiverKeys, roomSecret, SenderKeys, senderKey } from '../src/protocol/e2ee/keys';
import { DecryptWatch } from '../src/protocol/e2ee/watch';

const subtle = webcrypto.subtle as unknown as SubtleCrypto;

// A VP8 keyframe starts with a frame tag whose bit 0 is 0, a delta frame's is 1.
function vp8(key: boolean, n = 200): Uint8Array {
  const f = new Uint8Array(n);
  for (let i = 0; i < n; i++) f[i] = (i * 37 + 11) & 0xff;
  f[0] = key ? 0x50 : 0x51;
  return f;
}

let secret: CryptoKey;
let other: CryptoKey;
beforeAll(async () => {
  secret = await roomSecret(subtle, 'correct horse', 'room1', 1000);
  other = await roomSecret(subtle, 'wrong horse', 'room1', 1000);
});

describe('frame header', () => {
  it.each([
    [0, 0, 3],
    [7, 255, 3],
    [8, 256, 4],
    [255, 65535, 4],
    [256, 2 ** 48 - 1, 9],
    [2 ** 40, 2 ** 53 - 1, 14],
  ])('kid %d ctr %d round-trips in %d bytes', (kid, ctr, size) => {
    const h = encodeHeader(kid, ctr);
    expect(h.length).toBe(size);
    const frame = new Uint8Array(TAG_BYTES + h.length + 5);
    frame.set(h, frame.length - h.length);
    expect(decodeHeader(frame)).toEqual({ kid, ctr, size });
  });

  it('rejects a config byte with zero or oversized lengths, and frames too short for a tag', () => {
    expect(decodeHeader(new Uint8Array(40))).toBeNull(); // config 0
    const f = new Uint8Array(40);
    f[39] = 0x81; // KID length 8
    expect(decodeHeader(f)).toBeNull();
    const h = encodeHeader(1, 1);
    expect(decodeHeader(h)).toBeNull(); // no room for a tag
  });
});

describe('frame encryption', () => {
  it('round-trips audio and VP8 frames, leaving 0, 10 and 3 bytes clear', async () => {
    const k = await senderKey(subtle, secret, 'alice', 0);
    for (const [kind, data, clear] of [
      ['audio', vp8(true, 80), 0],
      ['video', vp8(true), 10],
      ['video', vp8(false), 3],
      ['video', vp8(true, 4), 4], // shorter than the clear prefix
    ] as const) {
      expect(clearBytes(kind, data)).toBe(clear);
      const sealed = await sealFrame(subtle, k, 5, kind, data);
      expect(sealed.length).toBe(data.length + TAG_BYTES + 3);
      expect(sealed.subarray(0, clear)).toEqual(data.subarray(0, clear));
      // Nothing after the clear prefix is readable.
      expect(Buffer.from(sealed).includes(Buffer.from(data.subarray(clear, clear + 8)))).toBe(data.length - clear < 8);
      const hdr = decodeHeader(sealed)!;
      expect(hdr).toMatchObject({ kid: 0, ctr: 5 });
      expect(await openFrame(subtle, k, hdr, kind, sealed)).toEqual(data);
    }
  });

  it('rejects a tampered tag, ciphertext, clear prefix or header', async () => {
    const k = await senderKey(subtle, secret, 'alice', 0);
    const sealed = await sealFrame(subtle, k, 9, 'video', vp8(true));
    const hdr = decodeHeader(sealed)!;
    const at = [
      sealed.length - hdr.size - 1, // tag
      20, // ciphertext
      5, // clear prefix (AAD)
    ];
    for (const i of at) {
      const bad = sealed.slice();
      bad[i]! ^= 1;
      await expect(openFrame(subtle, k, hdr, 'video', bad)).rejects.toThrow();
    }
    // A header naming another counter (AAD and nonce) fails too.
    const bad = sealed.slice();
    bad[sealed.length - 2]! ^= 1;
    await expect(openFrame(subtle, k, decodeHeader(bad)!, 'video', bad)).rejects.toThrow();
  });

  it('rejects a wrong passphrase, another sender and another epoch', async () => {
    const k = await senderKey(subtle, secret, 'alice', 0);
    const sealed = await sealFrame(subtle, k, 1, 'audio', vp8(false, 60));
    const hdr = decodeHeader(sealed)!;
    for (const wrong of [
      await senderKey(subtle, other, 'alice', 0),
      await senderKey(subtle, secret, 'bob', 0),
      await senderKey(subtle, secret, 'alice', 1),
      await senderKey(subtle, await roomSecret(subtle, 'correct horse', 'room2', 1000), 'alice', 0),
    ]) {
      await expect(openFrame(subtle, wrong, hdr, 'audio', sealed)).rejects.toThrow();
    }
  });
});

describe('sender and receiver keys', () => {
  it('never reuses a counter, also for frames sealed concurrently', async () => {
    const s = new SenderKeys(subtle, secret, 'alice');
    const frames = await Promise.all(Array.from({ length: 300 }, (_, i) => s.seal('video', vp8(i % 30 === 0))));
    const seen = new Set(frames.map((f) => { const h = decodeHeader(f)!; return `${h.kid}/${h.ctr}`; }));
    expect(seen.size).toBe(300);
    const r = new ReceiverKeys(subtle, secret, 'alice');
    for (const f of frames) await r.open('video', f, 0);
  });

  it('rolls over to a new key id when the counter runs out, and the receiver follows', async () => {
    const s = new SenderKeys(subtle, secret, 'alice', 3);
    const r = new ReceiverKeys(subtle, secret, 'alice');
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const f = await s.seal('audio', vp8(false, 50));
      const h = decodeHeader(f)!;
      ids.push(`${h.kid}/${h.ctr}`);
      expect(await r.open('audio', f, i)).toEqual(vp8(false, 50));
    }
    expect(ids).toEqual(['0/0', '0/1', '0/2', '0/3', '1/0', '1/1', '1/2', '1/3', '2/0', '2/1']);
    expect(r.epoch).toBe(2);
  });

  it('accepts the previous key for the overlap after a rotation, then no longer', async () => {
    const s = new SenderKeys(subtle, secret, 'alice');
    const r = new ReceiverKeys(subtle, secret, 'alice', 2000);
    const old = await s.seal('video', vp8(false));
    s.rotate();
    expect(s.kid).toBe(1);
    const fresh = await s.seal('video', vp8(false));
    await r.open('video', fresh, 1000); // adopts epoch 1 at t=1000
    expect(r.epoch).toBe(1);
    expect(await r.open('video', old, 2900)).toEqual(vp8(false)); // within the overlap
    await expect(r.open('video', old, 3100)).rejects.toThrow(/expired/);
    s.rotate();
    s.rotate();
    await r.open('video', await s.seal('video', vp8(true)), 4000); // skips epoch 2
    expect(r.epoch).toBe(3);
    expect(await r.open('video', fresh, 4001)).toEqual(vp8(false)); // epoch 1 is now the previous
    await expect(r.open('video', old, 4001)).rejects.toThrow(/older/); // epoch 0 is gone
  });

  it('adopts a newer key id only when its frame authenticates', async () => {
    const r = new ReceiverKeys(subtle, secret, 'alice');
    const forged = new SenderKeys(subtle, other, 'alice');
    forged.rotate();
    await expect(r.open('audio', await forged.seal('audio', vp8(false, 40)), 0)).rejects.toThrow();
    expect(r.epoch).toBe(0);
    await expect(r.open('audio', new Uint8Array(10), 0)).rejects.toThrow(/header/);
  });
});

describe('DecryptWatch', () => {
  it('reports "cannot decrypt" after 1 s without a good frame, and recovery at once', () => {
    const w = new DecryptWatch(0);
    expect(w.failed(500)).toBeNull();
    expect(w.failed(999)).toBeNull();
    expect(w.failed(1000)).toBe(false);
    expect(w.failed(1500)).toBeNull(); // reported once
    expect(w.opened(1600)).toBe(true);
    expect(w.opened(1700)).toBeNull();
    expect(w.failed(2600)).toBeNull(); // a loss within a second of a good frame
    expect(w.failed(2700)).toBe(false);
  });
});
