// Keys of end-to-end encryption. A passphrase (the link's #e2ee= fragment,
// never sent to the server) is stretched with PBKDF2-SHA-256 salted with the
// room name into the room secret; each sender's key of each epoch is derived
// from it with HKDF-SHA-256 and the sender's participant id, so no two senders
// share a key or a nonce space. The epoch is the key id (KID) in every frame:
// a sender moves to the next one when someone leaves (rotate) or when its
// counter would run out, receivers follow when a frame of the new epoch
// authenticates, and keep the previous epoch's key for an overlap so frames in
// flight still decrypt. Counters only grow within an epoch: a key never
// encrypts two frames with one counter.

import { decodeHeader, openFrame, sealFrame, type FrameKey, type FrameKind } from './frame';

export const PBKDF2_ITERATIONS = 600_000; // OWASP's figure for PBKDF2-HMAC-SHA-256
export const MAX_COUNTER = 2 ** 48 - 1;
/** How long a receiver still accepts the previous epoch's key. */
export const OVERLAP_MS = 2000;

const enc = new TextEncoder();

/** The room secret from the passphrase (salt: the room name). */
export async function roomSecret(
  subtle: SubtleCrypto,
  passphrase: string,
  room: string,
  iterations = PBKDF2_ITERATIONS,
): Promise<CryptoKey> {
  const pass = await subtle.importKey('raw', enc.encode(passphrase), 'PBKDF2', false, ['deriveBits']);
  const bits = await subtle.deriveBits(
    { name: 'PBKDF2', hash: 'SHA-256', salt: enc.encode(`podium-e2ee room ${room}`), iterations },
    pass,
    256,
  );
  return subtle.importKey('raw', bits, 'HKDF', false, ['deriveBits']);
}

/** The key of sender's epoch (its KID) from the room secret. */
export async function senderKey(subtle: SubtleCrypto, secret: CryptoKey, sender: string, epoch: number): Promise<FrameKey> {
  const bits = new Uint8Array(
    await subtle.deriveBits(
      { name: 'HKDF', hash: 'SHA-256', salt: enc.encode('podium-e2ee sframe'), info: enc.encode(`sender ${sender} epoch ${epoch}`) },
      secret,
      (16 + 12) * 8,
    ),
  );
  const key = await subtle.importKey('raw', bits.slice(0, 16), 'AES-GCM', false, ['encrypt', 'decrypt']);
  return { kid: epoch, key, salt: bits.slice(16) };
}

/** One sender's encryption state: its epoch's key and the next counter. */
export class SenderKeys {
  private current: Promise<FrameKey>;
  private epoch = 0;
  private ctr = 0;

  constructor(
    private readonly subtle: SubtleCrypto,
    private readonly secret: CryptoKey,
    private readonly id: string,
    private readonly maxCounter = MAX_COUNTER,
  ) {
    this.current = senderKey(subtle, secret, id, 0);
  }

  /** Moves to the next epoch (someone left, or on request). */
  rotate(): void {
    this.epoch++;
    this.ctr = 0;
    this.current = senderKey(this.subtle, this.secret, this.id, this.epoch);
  }

  get kid(): number {
    return this.epoch;
  }

  /** Encrypts one frame. The counter is taken before the first await, so concurrent calls never share one. */
  seal(kind: FrameKind, data: Uint8Array): Promise<Uint8Array<ArrayBuffer>> {
    if (this.ctr > this.maxCounter) this.rotate();
    const ctr = this.ctr++;
    const key = this.current;
    return key.then((k) => sealFrame(this.subtle, k, ctr, kind, data));
  }
}

/** What a receiver knows of one sender's keys: the current epoch and, for an overlap, the previous. */
export class ReceiverKeys {
  private current: { epoch: number; key: Promise<FrameKey> };
  private previous: { epoch: number; key: Promise<FrameKey>; until: number } | null = null;

  constructor(
    private readonly subtle: SubtleCrypto,
    private readonly secret: CryptoKey,
    private readonly sender: string,
    private readonly overlapMs = OVERLAP_MS,
  ) {
    this.current = { epoch: 0, key: senderKey(subtle, secret, sender, 0) };
  }

  get epoch(): number {
    return this.current.epoch;
  }

  /**
   * Decrypts a frame that arrived at now (ms); rejects one that does not
   * authenticate under the key its KID names (wrong passphrase, tampering, an
   * epoch older than the overlap allows). A newer epoch is adopted only once
   * one of its frames authenticates.
   */
  async open(kind: FrameKind, frame: Uint8Array, now: number): Promise<Uint8Array<ArrayBuffer>> {
    const hdr = decodeHeader(frame);
    if (!hdr) throw new Error('e2ee: no frame header');
    const cur = this.current;
    if (hdr.kid === cur.epoch) return openFrame(this.subtle, await cur.key, hdr, kind, frame);
    const prev = this.previous;
    if (prev && hdr.kid === prev.epoch) {
      if (now > prev.until) throw new Error(`e2ee: key ${hdr.kid} expired`);
      return openFrame(this.subtle, await prev.key, hdr, kind, frame);
    }
    if (hdr.kid < cur.epoch) throw new Error(`e2ee: key ${hdr.kid} is older than ${cur.epoch}`);
    const key = senderKey(this.subtle, this.secret, this.sender, hdr.kid);
    const plain = await openFrame(this.subtle, await key, hdr, kind, frame);
    if (this.current === cur) {
      this.previous = { ...cur, until: now + this.overlapMs };
      this.current = { epoch: hdr.kid, key };
    }
    return plain;
  }
}
