// Hybrid P2P (docs/p2p.md, docs/protocol.md "Peer to peer"): the pure parts.
// The state machine decides, from what the server says and what the two
// connections show, when to open and close the direct connection, what to
// report, and which connection's media to show; the codec order and the send
// encoding of the direct connection are plain functions. No clock, no browser.

import type { CodecLike, SendEncodingLike } from './env';

/**
 * - `off`: media through the SFU, no direct connection.
 * - `connecting`: the direct connection is being set up; the SFU's media is shown.
 * - `direct`: the direct connection's media is shown (reported `connected`: the SFU sends us nothing of the peer).
 * - `leaving`: back to the SFU; the direct media is still shown until the SFU's plays, then the direct connection closes.
 */
export type P2PPhase = 'off' | 'connecting' | 'direct' | 'leaving';

export interface P2PState {
  phase: P2PPhase;
  /** The epoch of the direct connection (0: none yet). */
  epoch: number;
  peer: string | null;
  initiator: boolean;
}

export const P2P_OFF: P2PState = { phase: 'off', epoch: 0, peer: null, initiator: false };

export type P2PInput =
  /** The server's `p2p` with `on: true`. */
  | { type: 'mode-on'; epoch: number; peer: string; initiator: boolean }
  /** The server's `p2p` with `on: false`: the SFU forwards again. */
  | { type: 'mode-off'; epoch: number }
  /** The direct connection is up and its media plays. */
  | { type: 'direct-media' }
  /** The direct connection failed (ICE failed, or it did not connect in time). */
  | { type: 'failed' }
  /** The SFU's media of the peer plays again (or we waited long enough). */
  | { type: 'sfu-media' }
  /** The signaling session ended: its connections are gone. */
  | { type: 'session-lost' };

export type P2PAction =
  | { type: 'open'; epoch: number; peer: string; initiator: boolean }
  | { type: 'close' }
  | { type: 'report'; epoch: number; state: 'connected' | 'failed' | 'closed' }
  /** Show the peer's media from this connection. */
  | { type: 'render'; via: 'p2p' | 'sfu'; peer: string }
  /** Start watching for the SFU's media of the peer (then `sfu-media`). */
  | { type: 'await-sfu'; peer: string };

export interface P2PStep {
  state: P2PState;
  actions: P2PAction[];
}

/** The next state and what to do, for one input. */
export function p2pStep(s: P2PState, input: P2PInput): P2PStep {
  const same = (actions: P2PAction[] = []): P2PStep => ({ state: s, actions });
  const off = (actions: P2PAction[]): P2PStep => ({ state: { ...s, phase: 'off' }, actions });
  switch (input.type) {
    case 'mode-on': {
      if (input.epoch <= s.epoch) return same(); // stale or repeated
      const open: P2PAction = { type: 'open', epoch: input.epoch, peer: input.peer, initiator: input.initiator };
      const next: P2PState = { phase: 'connecting', epoch: input.epoch, peer: input.peer, initiator: input.initiator };
      const actions: P2PAction[] = [];
      if (s.phase === 'direct' || s.phase === 'leaving') actions.push({ type: 'render', via: 'sfu', peer: s.peer ?? '' });
      if (s.phase !== 'off') actions.push({ type: 'close' });
      actions.push(open);
      return { state: next, actions };
    }
    case 'mode-off':
      if (input.epoch < s.epoch) return same();
      switch (s.phase) {
        case 'connecting':
          return off([{ type: 'close' }]);
        case 'direct':
          return { state: { ...s, phase: 'leaving' }, actions: [{ type: 'await-sfu', peer: s.peer ?? '' }] };
        default:
          return same();
      }
    case 'direct-media':
      if (s.phase !== 'connecting') return same();
      return {
        state: { ...s, phase: 'direct' },
        actions: [
          { type: 'render', via: 'p2p', peer: s.peer ?? '' },
          { type: 'report', epoch: s.epoch, state: 'connected' },
        ],
      };
    case 'failed':
      switch (s.phase) {
        case 'connecting':
          return off([{ type: 'report', epoch: s.epoch, state: 'failed' }, { type: 'close' }]);
        case 'direct':
          // The direct media is gone: the SFU's is the only one left.
          return off([
            { type: 'report', epoch: s.epoch, state: 'failed' },
            { type: 'render', via: 'sfu', peer: s.peer ?? '' },
            { type: 'close' },
          ]);
        case 'leaving':
          return off([{ type: 'render', via: 'sfu', peer: s.peer ?? '' }, { type: 'close' }]);
        default:
          return same();
      }
    case 'sfu-media':
      if (s.phase !== 'leaving') return same();
      return off([{ type: 'render', via: 'sfu', peer: s.peer ?? '' }, { type: 'close' }]);
    case 'session-lost': {
      const actions: P2PAction[] = [];
      if (s.phase === 'direct' || s.phase === 'leaving') actions.push({ type: 'render', via: 'sfu', peer: s.peer ?? '' });
      if (s.phase !== 'off') actions.push({ type: 'close' });
      // A new session's epochs start again from the room's count: forget ours.
      return { state: { ...P2P_OFF }, actions };
    }
  }
}

/** The direct connection's video bit rate cap (one encoding). */
export const P2P_MAX_BITRATE = 2_500_000;
/** The direct connection's video height cap. */
export const P2P_MAX_HEIGHT = 720;

/**
 * The one send encoding of the direct connection: no simulcast, at most
 * 2.5 Mb/s, scaled down to at most 720 lines from the capture's height (0 or
 * unknown: not scaled).
 */
export function p2pEncoding(captureHeight: number): SendEncodingLike {
  const scale = captureHeight > P2P_MAX_HEIGHT ? captureHeight / P2P_MAX_HEIGHT : 1;
  return { active: true, maxBitrate: P2P_MAX_BITRATE, scaleResolutionDownBy: scale };
}

const videoRank = (mime: string): number => {
  switch (mime.toLowerCase()) {
    case 'video/vp9':
      return 0;
    case 'video/h264':
      return 1;
    case 'video/vp8':
      return 2;
    default:
      return 3; // rtx, red, ulpfec, AV1 and others: after, in their order
  }
};

/**
 * Video codec preferences of the direct connection: VP9, then H.264, then VP8
 * (every browser has VP8; the answerer keeps the first both sides support),
 * then everything else (RTX, FEC) as the browser listed it.
 */
export function p2pVideoCodecs(codecs: readonly CodecLike[]): CodecLike[] {
  return codecs
    .map((c, i) => ({ c, i }))
    .sort((a, b) => videoRank(a.c.mimeType) - videoRank(b.c.mimeType) || a.i - b.i)
    .map((x) => x.c);
}

/**
 * Audio codec preferences: RED (redundant Opus) first where the browser has
 * it, then Opus with in-band FEC (`useinbandfec=1`, Chromium's default), then
 * the rest. A side without RED answers Opus.
 */
export function p2pAudioCodecs(codecs: readonly CodecLike[]): CodecLike[] {
  const rank = (c: CodecLike): number => {
    const m = c.mimeType.toLowerCase();
    if (m === 'audio/red') return 0;
    if (m === 'audio/opus') return 1;
    return 2;
  };
  return codecs
    .map((c, i) => ({ c, i }))
    .sort((a, b) => rank(a.c) - rank(b.c) || a.i - b.i)
    .map((x) => x.c);
}

/** Adds `useinbandfec=1` to Opus in an SDP that lacks it (its fmtp, or a new one). */
export function withOpusFec(sdp: string): string {
  const m = /a=rtpmap:(\d+) opus\/48000/i.exec(sdp);
  if (!m) return sdp;
  const pt = m[1];
  const fmtp = new RegExp(`a=fmtp:${pt} ([^\\r\\n]*)`);
  const f = fmtp.exec(sdp);
  if (f) {
    if (/useinbandfec=1/.test(f[1] ?? '')) return sdp;
    return sdp.replace(fmtp, `a=fmtp:${pt} ${f[1]};useinbandfec=1`);
  }
  return sdp.replace(m[0], `${m[0]}\r\na=fmtp:${pt} useinbandfec=1`);
}

/** Inbound counters of one media kind, to tell whether it plays. */
export interface Progress {
  framesDecoded: number;
  packetsReceived: number;
}

/**
 * Whether media plays now compared with a baseline: video frames decoded
 * since (at least two, so a single stale frame does not count), or, for a
 * participant without video, audio packets received.
 */
export function playing(before: Progress | null, now: Progress | null, hasVideo: boolean): boolean {
  if (!now) return false;
  const b = before ?? { framesDecoded: 0, packetsReceived: 0 };
  if (hasVideo) return now.framesDecoded >= b.framesDecoded + 2;
  return now.packetsReceived > b.packetsReceived;
}
