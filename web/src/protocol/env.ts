// The narrow slices of the browser that the protocol layer uses. Everything
// here is injectable through ConferenceOptions so tests can run on fakes;
// the defaults wrap the real browser objects.

import type { IceCandidateInit } from './messages';

export const WS_OPEN = 1;

export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
}

export interface IceCandidateLike {
  readonly candidate: string;
  readonly sdpMid: string | null;
  readonly sdpMLineIndex: number | null;
  readonly usernameFragment?: string | null;
  toJSON?(): IceCandidateInit;
}

export interface TrackEventLike {
  readonly track: MediaStreamTrack;
  readonly streams: readonly MediaStream[];
  readonly transceiver?: { readonly mid: string | null } | null;
  /** The RTCRtpReceiver (for end-to-end encryption's transform). */
  readonly receiver?: unknown;
}

export interface CodecLike {
  mimeType: string;
  clockRate: number;
  channels?: number;
  sdpFmtpLine?: string;
  /** RTCRtpSender.getCapabilities only (Chromium): the scalability modes the encoder supports. */
  scalabilityModes?: string[];
}

/** One encoding of RTCRtpSendParameters (the fields the client touches). */
export interface SendEncodingLike {
  rid?: string;
  active?: boolean;
  maxBitrate?: number;
  scaleResolutionDownBy?: number;
  scalabilityMode?: string;
  [key: string]: unknown;
}

/** RTCRtpSendParameters, as returned by getParameters and given back to setParameters. */
export interface SendParametersLike {
  encodings: SendEncodingLike[];
  [key: string]: unknown;
}

/** The slice of RTCRtpSender used to pause and resume video without renegotiation. */
export interface SenderLike {
  getParameters(): SendParametersLike;
  setParameters(params: SendParametersLike): Promise<void>;
  /** Swaps the sent track without renegotiation (a device switch). */
  replaceTrack?(track: MediaStreamTrack | null): Promise<void>;
}

export interface TransceiverLike {
  readonly mid: string | null;
  readonly sender?: SenderLike;
  setCodecPreferences?(codecs: CodecLike[]): void;
}

export interface SessionDescriptionLike {
  type: 'offer' | 'answer' | 'pranswer' | 'rollback';
  sdp?: string;
}

/** Map-like collection of stats objects, as RTCStatsReport. */
export interface StatsReportLike {
  forEach(cb: (value: Record<string, unknown>) => void): void;
}

export interface PeerConnectionLike {
  readonly connectionState: RTCPeerConnectionState;
  onicecandidate: ((ev: { readonly candidate: IceCandidateLike | null }) => void) | null;
  ontrack: ((ev: TrackEventLike) => void) | null;
  onconnectionstatechange: ((ev: unknown) => void) | null;
  addTransceiver(
    trackOrKind: MediaStreamTrack | 'audio' | 'video',
    init?: RTCRtpTransceiverInit,
  ): TransceiverLike;
  createOffer(): Promise<SessionDescriptionLike>;
  createAnswer(): Promise<SessionDescriptionLike>;
  setLocalDescription(desc: SessionDescriptionLike): Promise<void>;
  setRemoteDescription(desc: SessionDescriptionLike): Promise<void>;
  addIceCandidate(candidate?: IceCandidateInit): Promise<void>;
  getStats(): Promise<StatsReportLike>;
  close(): void;
}

export interface PeerConnectionConfig {
  iceServers: { urls: string | string[]; username?: string; credential?: string }[];
}

export type TimerHandle = unknown;

/** Time source and timers; the protocol layer never reads the clock directly. */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => globalThis.setTimeout(fn, ms),
  clearTimeout: (h) => globalThis.clearTimeout(h as ReturnType<typeof globalThis.setTimeout>),
};

export function browserWebSocket(url: string): WebSocketLike {
  return new WebSocket(url) as unknown as WebSocketLike;
}

export function browserPeerConnection(config: PeerConnectionConfig): PeerConnectionLike {
  return new RTCPeerConnection(config) as unknown as PeerConnectionLike;
}

/** Codecs the browser can receive for `kind`, for setCodecPreferences. */
export function browserCodecs(kind: 'audio' | 'video'): CodecLike[] | null {
  const R = (globalThis as { RTCRtpReceiver?: typeof RTCRtpReceiver }).RTCRtpReceiver;
  if (!R || typeof R.getCapabilities !== 'function') return null;
  return R.getCapabilities(kind)?.codecs ?? null;
}

/** Codecs the browser can send for `kind` (RTCRtpSender.getCapabilities), for feature detection. */
export function browserSenderCodecs(kind: 'audio' | 'video'): CodecLike[] | null {
  const S = (globalThis as { RTCRtpSender?: typeof RTCRtpSender }).RTCRtpSender;
  if (!S || typeof S.getCapabilities !== 'function') return null;
  return (S.getCapabilities(kind)?.codecs as CodecLike[] | undefined) ?? null;
}

/** `ws(s)://<host>/ws` for the page's own origin. */
export function defaultSignalingUrl(): string {
  const loc = globalThis.location;
  const scheme = loc.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${loc.host}/ws`;
}
