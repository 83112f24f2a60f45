// The end-to-end encrypted frame format, modelled on SFrame (RFC 9605):
//
//   clear prefix | AES-GCM ciphertext | 16-byte tag | KID | CTR | config
//
// The header (KID, CTR, config) is a trailer rather than SFrame's leading
// header so that the first bytes of a VP8 frame stay where the SFU and the
// receiving browser's depacketizer read them: 10 clear bytes of a keyframe
// (frame tag, start code, size), 3 of a delta frame (frame tag), as Jitsi does.
// Audio keeps no clear byte (levels travel in the RFC 6464 header extension).
// config = (KID length << 4) | CTR length, each 1..8 bytes, big-endian.
// AAD = clear prefix | header, so neither can be changed unnoticed.
// Nonce = the key's 12-byte salt XOR the counter (SFrame's construction).

export const TAG_BYTES = 16;
export const KEYFRAME_CLEAR = 10;
export const DELTA_CLEAR = 3;

export type FrameKind = 'audio' | 'video';

/** How many leading bytes of a frame stay in the clear. */
export function clearBytes(kind: FrameKind, data: Uint8Array): number {
  if (kind === 'audio' || data.length === 0) return 0;
  // VP8 frame tag: bit 0 of the first byte is 0 for a keyframe.
  const n = (data[0]! & 1) === 0 ? KEYFRAME_CLEAR : DELTA_CLEAR;
  return Math.min(n, data.length);
}

/** A sender key of one epoch: the AES-GCM key and its nonce salt. */
export interface FrameKey {
  readonly kid: number;
  readonly key: CryptoKey;
  readonly salt: Uint8Array; // 12 bytes
}

export interface Header {
  kid: number;
  ctr: number;
  /** Bytes the header takes at the end of the frame. */
  size: number;
}

function byteLength(v: number): number {
  let n = 1;
  while (n < 8 && v >= 2 ** (8 * n)) n++;
  return n;
}

function putUint(out: Uint8Array, at: number, len: number, v: number): void {
  for (let i = len - 1; i >= 0; i--) {
    out[at + i] = v % 256;
    v = Math.floor(v / 256);
  }
}

function getUint(b: Uint8Array, at: number, len: number): number {
  let v = 0;
  for (let i = 0; i < len; i++) v = v * 256 + b[at + i]!;
  return v;
}

export function encodeHeader(kid: number, ctr: number): Uint8Array {
  if (!Number.isSafeInteger(kid) || kid < 0 || !Number.isSafeInteger(ctr) || ctr < 0) {
    throw new RangeError(`e2ee: bad key id ${kid} or counter ${ctr}`);
  }
  const kl = byteLength(kid);
  const cl = byteLength(ctr);
  const out = new Uint8Array(kl + cl + 1);
  putUint(out, 0, kl, kid);
  putUint(out, kl, cl, ctr);
  out[kl + cl] = (kl << 4) | cl;
  return out;
}

/** The header at the end of frame, or null when there is none that fits. */
export function decodeHeader(frame: Uint8Array): Header | null {
  if (frame.length < 1) return null;
  const config = frame[frame.length - 1]!;
  const kl = config >> 4;
  const cl = config & 0x0f;
  if (kl < 1 || kl > 7 || cl < 1 || cl > 7) return null; // 7 bytes hold any safe integer
  const size = kl + cl + 1;
  if (frame.length < size + TAG_BYTES) return null;
  const at = frame.length - size;
  const kid = getUint(frame, at, kl);
  const ctr = getUint(frame, at + kl, cl);
  if (!Number.isSafeInteger(kid) || !Number.isSafeInteger(ctr)) return null;
  return { kid, ctr, size };
}

export function nonce(salt: Uint8Array, ctr: number): Uint8Array<ArrayBuffer> {
  const iv = new Uint8Array(12);
  iv.set(salt);
  let v = ctr;
  for (let i = 11; i >= 4 && v > 0; i--) {
    iv[i] = iv[i]! ^ (v % 256);
    v = Math.floor(v / 256);
  }
  return iv;
}

function concat(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Encrypts one frame under key with counter ctr (the caller never repeats a ctr for a key). */
export async function sealFrame(
  subtle: SubtleCrypto,
  key: FrameKey,
  ctr: number,
  kind: FrameKind,
  data: Uint8Array,
): Promise<Uint8Array<ArrayBuffer>> {
  const clear = clearBytes(kind, data);
  const prefix = data.subarray(0, clear);
  const header = encodeHeader(key.kid, ctr);
  const sealed = await subtle.encrypt(
    { name: 'AES-GCM', iv: nonce(key.salt, ctr), additionalData: concat(prefix, header), tagLength: TAG_BYTES * 8 },
    key.key,
    data.slice(clear),
  );
  return concat(prefix, new Uint8Array(sealed), header);
}

/**
 * Decrypts one frame whose header was read as hdr with the key for hdr.kid;
 * rejects (OperationError) on a wrong key or anything altered.
 */
export async function openFrame(
  subtle: SubtleCrypto,
  key: FrameKey,
  hdr: Header,
  kind: FrameKind,
  frame: Uint8Array,
): Promise<Uint8Array<ArrayBuffer>> {
  const body = frame.subarray(0, frame.length - hdr.size);
  const clear = Math.min(clearBytes(kind, body), body.length - TAG_BYTES);
  if (clear < 0) throw new RangeError('e2ee: frame too short');
  const prefix = body.subarray(0, clear);
  const header = frame.subarray(frame.length - hdr.size);
  const plain = await subtle.decrypt(
    { name: 'AES-GCM', iv: nonce(key.salt, hdr.ctr), additionalData: concat(prefix, header), tagLength: TAG_BYTES * 8 },
    key.key,
    body.slice(clear),
  );
  return concat(prefix, new Uint8Array(plain));
}
