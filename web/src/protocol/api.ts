// The public types of Conference: its options, events and state.

import type { EndToEnd } from './e2ee/client';
import type {
  Clock,
  CodecLike,
  PeerConnectionConfig,
  PeerConnectionLike,
  SendEncodingLike,
  WebSocketLike,
} from './env';
import type { BandwidthStats, ChatEntry, Participant, PcName } from './messages';
import type { P2PState } from './p2p';
import type { MediaKind } from './stats';

export type ConnectionState = 'idle' | 'connecting' | 'connected' | 'reconnecting' | 'closed';

export interface LocalState {
  audioMuted: boolean;
  videoMuted: boolean;
  /** Our hand is raised (raiseHand). */
  handRaised: boolean;
}

/** The room's settings from the last `room` message. */
export interface RoomSettings {
  /** The room's Last N; `-1` = unlimited. */
  lastN: number;
  /** Participants whose video everyone receives. */
  onStage: string[];
}

/** A change of the room's settings (setRoomSettings); fields left out are unchanged. */
export interface RoomSettingsChange {
  lastN?: number;
  onStage?: string[];
}

export interface RemoteTrack {
  track: MediaStreamTrack;
  stream: MediaStream | null;
}

export interface RemoteTracks {
  audio?: RemoteTrack;
  video?: RemoteTrack;
}

/** Why the conference ended for good (no reconnect follows). */
export type CloseReason = 'left' | 'bye' | 'error';

export interface ConferenceEvents {
  /** Signaling state: idle → connecting → connected ⇄ reconnecting → closed. */
  'connection-state': { state: ConnectionState; previous: ConnectionState };
  /**
   * A `welcome` was received (first join and every reconnect). `publish`: it
   * grants the publish permission; without it the session has no publish
   * connection and the local stream is not sent (an audience member).
   */
  welcome: { id: string; room: string; resumed: boolean; publish: boolean };
  /**
   * A participant became known: from `welcome` or `participants`. A big room
   * lists only some of its participants (who publish, are on stage or raise a
   * hand, and the first ones): the others are in `participantCount` and in the
   * pages listParticipants() asks for (docs/protocol.md, "The participant list").
   */
  'participant-joined': { participant: Participant };
  'participant-updated': { participant: Participant; previous: Participant };
  'participant-left': { id: string; participant: Participant };
  /** How many are in the room, us included, changed. */
  'participant-count': { count: number };
  /** A page of everyone in the room, answering listParticipants(cursor); `next` is "" after the last. */
  'participant-page': { cursor: string; participants: Participant[]; next: string; count: number };
  /** A remote track for `participantId` (replaces any earlier one of that kind). */
  'track-added': {
    participantId: string;
    kind: MediaKind;
    track: MediaStreamTrack;
    stream: MediaStream | null;
  };
  'track-removed': { participantId: string; kind: MediaKind; track: MediaStreamTrack };
  /** The local mute state changed (see mute()). */
  'local-state': LocalState;
  /** We started or stopped sharing a screen (startScreenShare / stopScreenShare). */
  'screen-share': { sharing: boolean };
  /** connectionState of one of the two peer connections. */
  'peer-state': { pc: PcName; state: RTCPeerConnectionState };
  /** The session was lost; a new attempt starts after delayMs. */
  reconnecting: { attempt: number; delayMs: number; reason: string };
  /** A `welcome` arrived again after the session had been lost. */
  reconnected: { id: string; attempts: number };
  /** A server `error` message, or a client-side problem (source 'client'). */
  error: { code: string; message: string; fatal: boolean; source: 'server' | 'client' };
  /** The conference ended and will not reconnect. */
  closed: { reason: CloseReason; message: string };
  /** The dominant speaker changed (`speaker`); null when nobody is dominant. May be our own id. */
  speaker: { id: string | null };
  /** The set of participants whose video we receive (`forwarded`), in priority order. */
  forwarded: { ids: string[]; lastN: number };
  /** The room's settings (`room`). */
  room: RoomSettings;
  /** Our video was paused (`pause-video`) or resumed (`resume-video`, or a new session). */
  'video-paused': { paused: boolean };
  /** Our own pin list changed (pin(), unpin(), or a pinned participant left). */
  pinned: { ids: string[] };
  /**
   * The simulcast encodings (RIDs) the server wants from us (`layers`); null =
   * all of them (before the first `layers` of a session).
   */
  layers: { active: string[] | null };
  /**
   * The forwarded videos the SFU stopped sending us for lack of bandwidth
   * (`suspended`); emitted when the set changes, and emptied by a new session.
   */
  suspended: { ids: string[] };
  /**
   * The SFU's bandwidth estimate and allocation for us (`stats`), on every
   * message; null when a new session starts (the old figures no longer apply).
   */
  bandwidth: { stats: BandwidthStats | null };
  /** A chat message was posted in the room (ours too, as the server stamped it). */
  chat: { message: ChatEntry };
  /** The room's chat was replaced by the server's history (after every welcome); `messages` is the whole log. */
  'chat-history': { messages: ChatEntry[] };
  /**
   * Hybrid P2P (docs/p2p.md): the direct connection to the one other
   * participant changed phase (`direct`: its media is shown; the SFU sends us
   * nothing of that participant).
   */
  p2p: P2PState;
}

export interface Logger {
  debug(...args: unknown[]): void;
  warn(...args: unknown[]): void;
}

export interface BackoffOptions {
  initialMs: number;
  factor: number;
  maxMs: number;
}

export interface ConferenceOptions {
  room: string;
  name: string;
  /** Reserved for access control; sent in `join` when set. */
  token?: string;
  /** Camera and microphone to publish (first audio and first video track). */
  localStream?: MediaStream | null;
  /**
   * Join receive-only (`audience: true` in `join`): no publish connection,
   * whatever the token grants; give no localStream then.
   */
  audience?: boolean;
  /** Signaling URL; default `ws(s)://<location.host>/ws`. */
  url?: string;
  createWebSocket?: (url: string) => WebSocketLike;
  createPeerConnection?: (config: PeerConnectionConfig) => PeerConnectionLike;
  /** Receivable codecs of a kind (for VP8 preference); default RTCRtpReceiver.getCapabilities. */
  codecs?: (kind: 'audio' | 'video') => CodecLike[] | null;
  clock?: Clock;
  pingIntervalMs?: number;
  pongTimeoutMs?: number;
  /** How long a peer connection may stay `disconnected` before reconnecting. */
  disconnectedTimeoutMs?: number;
  backoff?: Partial<BackoffOptions>;
  /**
   * Publish video as simulcast (SIMULCAST_ENCODINGS, the default) or, with
   * `false`, as one encoding capped at videoMaxBitrate.
   */
  simulcast?: boolean;
  /** The video send encodings, overriding `simulcast` (e.g. for tests). */
  videoEncodings?: readonly SendEncodingLike[];
  /** Bitrate cap of the single video encoding when simulcast is off; default 1.5 Mb/s. */
  videoMaxBitrate?: number;
  /**
   * Codecs the browser can send (RTCRtpSender.getCapabilities): an encoding's
   * `scalabilityMode` is kept only when VP8 lists it. Default: the browser's.
   */
  senderCodecs?: (kind: 'audio' | 'video') => CodecLike[] | null;
  /**
   * Follow the capture size (default true): publish as many simulcast
   * encodings as it calls for (layers.ts: 3 from 960×540, 2 from 640×360, else
   * one), and turn them on only in combinations libwebrtc sends in full (see
   * sendable in encodings.ts), so a camera that shrinks during the call sends its
   * full resolution instead of only the ¼ encoding. `false`: always the three.
   */
  layerLimit?: boolean;
  /** setConstraints() changes are collected this long before one `constraints` message; default 200 ms. */
  constraintsDelayMs?: number;
  logger?: Logger;
  /**
   * Hybrid P2P (docs/p2p.md): the browser's RTCPeerConnection for the direct
   * connection; default `new RTCPeerConnection`. `null` turns the direct
   * connection off: this client stays on the SFU (it reports `closed`).
   */
  createDirectConnection?: ((config: PeerConnectionConfig) => RTCPeerConnection) | null;
  /**
   * End-to-end encryption (docs/e2ee.md): transforms on every sender and
   * receiver, and `e2ee: true` in `join`. Absent: media as before.
   */
  e2ee?: EndToEnd;
}
