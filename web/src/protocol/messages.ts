// Signaling messages of the Podium protocol, version 1 (docs/protocol.md).
//
// Every message is one JSON object with a string `type`; the unions below are
// discriminated on it. The bodies and the `type` strings are generated from the
// Go types of the server (generated/messages.ts, `make protocol`); this file
// pairs them into the messages this client sends and handles, and parses
// server frames.

import * as wire from './generated/messages';

export const PROTOCOL_VERSION = wire.Version;

import type { PcName, Participant, Resume, VideoStats } from './generated/messages';
export type { ByeCode, ErrorCode, MessageType, PcName, Participant, Resume, VideoConstraint, VideoStats } from './generated/messages';

/** A posted chat message: sender, plain text (never markup) and server time (docs/protocol.md, "Chat and raised hands"). */
export type ChatEntry = wire.ChatMessage;

/** An ICE server as in `welcome.iceServers`; like RTCIceServer, `urls` may also be one URL. */
export interface IceServer extends Omit<wire.ICEServer, 'urls'> {
  urls: string | string[];
}

/**
 * A candidate as the browser gives it (RTCIceCandidateInit): every field may
 * be absent; the server reads a missing `candidate` as "".
 */
export type IceCandidateInit = Partial<wire.Candidate>;

/** Role of a remote video in the layout (docs/protocol.md, "Simulcast"). */
export type VideoRole = NonNullable<wire.VideoConstraint['role']>;

// ---- client → server -------------------------------------------------------

export interface JoinMessage extends wire.Join {
  type: typeof wire.TypeJoin;
  version: typeof PROTOCOL_VERSION;
}

/** Client → server with pc `publish`; server → client with pc `subscribe`. */
export interface OfferMessage extends wire.SDP {
  type: typeof wire.TypeOffer;
}

/** Server → client with pc `publish`; client → server with pc `subscribe`. */
export interface AnswerMessage extends wire.SDP {
  type: typeof wire.TypeAnswer;
}

/** Trickle ICE, both directions; `candidate: null` is end of candidates. */
export interface CandidateMessage extends Omit<wire.TrickleCandidate, 'candidate'> {
  type: typeof wire.TypeCandidate;
  candidate: IceCandidateInit | null;
}

/** The sender's own state: `audio: true` means the microphone is muted. */
export interface MuteMessage extends wire.Mute {
  type: typeof wire.TypeMute;
}

export interface PingMessage extends wire.Ping {
  type: typeof wire.TypePing;
}

export interface LeaveMessage {
  type: typeof wire.TypeLeave;
}

/** Always receive this participant's video (docs/protocol.md, "Speaker, Last N…"). */
export interface PinMessage extends wire.PinTarget {
  type: typeof wire.TypePin;
}

/** Stop always receiving this participant's video. */
export interface UnpinMessage extends wire.PinTarget {
  type: typeof wire.TypeUnpin;
}

/** The most videos this client wants; `-1` = as many as the room allows. */
export interface SetLastNMessage extends wire.SetLastN {
  type: typeof wire.TypeSetLastN;
}

/** Changes the room's settings (`lastN`, `-1` = unlimited; `onStage`); fields left out are unchanged. */
export interface RoomSettingsMessage extends wire.RoomSettings {
  type: typeof wire.TypeRoomSettings;
}

/** The rendered size (device pixels) and role of remote videos; participants left out keep their previous constraint. */
export interface ConstraintsMessage extends wire.Constraints {
  type: typeof wire.TypeConstraints;
}

/** Posts a chat message (1–2000 characters of plain text). */
export interface ChatPostMessage extends wire.ChatPost {
  type: typeof wire.TypeChat;
}

/** Raises or lowers our hand. */
export interface RaiseHandMessage extends wire.RaiseHand {
  type: typeof wire.TypeRaiseHand;
}

/**
 * The direct connection's signaling, relayed by the server to the peer (docs/protocol.md,
 * "Peer to peer"): `to` on the way in, `from` (set by the server) on the way out.
 */
export interface P2PSignalMessage extends Omit<wire.P2PSignal, 'candidate'> {
  type: typeof wire.TypeP2POffer | typeof wire.TypeP2PAnswer | typeof wire.TypeP2PCandidate;
  candidate?: IceCandidateInit | null;
}

/** Our direct connection's state in an epoch. */
export interface P2PStateMessage extends Omit<wire.P2PState, 'state'> {
  type: typeof wire.TypeP2PState;
  state: typeof wire.P2PConnected | typeof wire.P2PFailed | typeof wire.P2PClosed;
}

export type ClientMessage =
  | P2PSignalMessage
  | P2PStateMessage
  | ChatPostMessage
  | RaiseHandMessage
  | JoinMessage
  | OfferMessage
  | AnswerMessage
  | CandidateMessage
  | MuteMessage
  | PingMessage
  | LeaveMessage
  | PinMessage
  | UnpinMessage
  | SetLastNMessage
  | RoomSettingsMessage
  | ConstraintsMessage
  | ListParticipantsMessage;

/** Asks for the page of everyone in the room after `cursor` ("" for the first). */
export interface ListParticipantsMessage extends wire.ListParticipants {
  type: typeof wire.TypeListParticipants;
}

// ---- server → client -------------------------------------------------------

export interface WelcomeMessage extends Omit<wire.Welcome, 'iceServers'> {
  type: typeof wire.TypeWelcome;
  iceServers: IceServer[];
}

/** The room's batched changes to the participants it lists, and its size (docs/protocol.md, "The participant list"). */
export interface ParticipantsMessage extends wire.ParticipantDiff {
  type: typeof wire.TypeParticipants;
}

/** A page of everyone in the room, answering list-participants. */
export interface ParticipantPageMessage extends wire.ParticipantPage {
  type: typeof wire.TypeParticipantPage;
}

/** From servers before `participants`; still accepted. */
export interface ParticipantJoinedMessage extends wire.ParticipantEvent {
  type: typeof wire.TypeJoined;
}

export interface ParticipantUpdatedMessage extends wire.ParticipantEvent {
  type: typeof wire.TypeUpdated;
}

export interface ParticipantLeftMessage extends wire.ParticipantLeft {
  type: typeof wire.TypeLeft;
}

export interface PongMessage extends wire.Ping {
  type: typeof wire.TypePong;
}

/** `code` is one of the server's error codes; other strings are tolerated. */
export interface ErrorMessage extends Omit<wire.Error, 'code'> {
  type: typeof wire.TypeError;
  code: wire.ErrorCode | (string & {});
}

export interface ByeMessage extends wire.Bye {
  type: typeof wire.TypeBye;
}

/** The dominant speaker changed; `id` is `""` when nobody is dominant. */
export interface SpeakerMessage extends wire.Speaker {
  type: typeof wire.TypeSpeaker;
}

/** Whose microphone each of this client's audio slots carries (`""`: none); see remote.ts. */
export interface AudioSlotsMessage extends wire.AudioSlots {
  type: typeof wire.TypeAudioSlots;
}

/** The participants whose video this client receives, in priority order, and the N in force (`-1` = unlimited). */
export interface ForwardedMessage extends wire.Forwarded {
  type: typeof wire.TypeForwarded;
}

/** Nobody receives this client's video: stop sending it until `resume-video`. */
export interface PauseVideoMessage {
  type: typeof wire.TypePauseVideo;
}

export interface ResumeVideoMessage {
  type: typeof wire.TypeResumeVideo;
}

/** The room's settings; sent after `welcome` and whenever they change. */
export interface RoomMessage extends wire.RoomState {
  type: typeof wire.TypeRoom;
}

/**
 * Which of our own simulcast encodings (by RID) some receiver needs: keep
 * those active and the others `active: false`. `pause-video` still wins.
 */
export interface LayersMessage extends wire.Layers {
  type: typeof wire.TypeLayers;
}

/**
 * The forwarded videos (a subset of the last `forwarded` ids) the SFU stopped
 * sending us for lack of bandwidth; sent on every change (docs/protocol.md,
 * "Bandwidth adaptation"). Shown as paused, not as a frozen frame.
 */
export interface SuspendedMessage extends wire.Suspended {
  type: typeof wire.TypeSuspended;
}

/** The SFU's view of our downlink: the body of a `stats` message. */
export type BandwidthStats = wire.Stats;

/** About once a second: the SFU's bandwidth estimate and allocation for us. */
export interface StatsMessage extends wire.Stats {
  type: typeof wire.TypeStats;
}

/** A chat message posted in the room (ours too), stamped by the server. */
export interface ChatRelayMessage extends wire.ChatMessage {
  type: typeof wire.TypeChat;
}

/** Right after `welcome`: the room's kept chat, oldest first; replaces what the client showed. */
export interface ChatHistoryMessage extends wire.ChatHistory {
  type: typeof wire.TypeChatHistory;
}

/** P2P mode on (open a direct connection to `peer`; the `initiator` offers) or off (back to the SFU). */
export interface P2PMessage extends wire.P2PMode {
  type: typeof wire.TypeP2P;
}

export type ServerMessage =
  | P2PMessage
  | P2PSignalMessage
  | ChatRelayMessage
  | ChatHistoryMessage
  | WelcomeMessage
  | OfferMessage
  | AnswerMessage
  | CandidateMessage
  | ParticipantsMessage
  | ParticipantPageMessage
  | ParticipantJoinedMessage
  | ParticipantUpdatedMessage
  | ParticipantLeftMessage
  | PongMessage
  | ErrorMessage
  | ByeMessage
  | SpeakerMessage
  | AudioSlotsMessage
  | ForwardedMessage
  | PauseVideoMessage
  | ResumeVideoMessage
  | RoomMessage
  | LayersMessage
  | SuspendedMessage
  | StatsMessage;

export type ServerMessageType = ServerMessage['type'];

// ---- parsing ---------------------------------------------------------------

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(o: Obj, k: string): string | undefined {
  const v = o[k];
  return typeof v === 'string' ? v : undefined;
}

function bool(o: Obj, k: string): boolean {
  return o[k] === true;
}

function pcName(o: Obj): PcName | undefined {
  const v = o['pc'];
  return v === 'publish' || v === 'subscribe' ? v : undefined;
}

function participant(v: unknown): Participant | undefined {
  if (!isObj(v)) return undefined;
  const id = str(v, 'id');
  const name = str(v, 'name');
  if (id === undefined || name === undefined) return undefined;
  const p: Participant = { id, name, audioMuted: bool(v, 'audioMuted'), videoMuted: bool(v, 'videoMuted') };
  const screen = str(v, 'screen');
  if (screen) p.screen = screen;
  if (bool(v, 'handRaised')) p.handRaised = true;
  if (bool(v, 'e2ee')) p.e2ee = true;
  if (bool(v, 'audience')) p.audience = true;
  return p;
}

/** A chat entry; undefined when a field is missing or of the wrong type. */
function chatEntry(v: unknown): ChatEntry | undefined {
  if (!isObj(v)) return undefined;
  const from = str(v, 'from');
  const name = str(v, 'name');
  const text = str(v, 'text');
  const seq = v['seq'];
  const time = v['time'];
  if (from === undefined || name === undefined || text === undefined) return undefined;
  if (typeof seq !== 'number' || !Number.isFinite(seq) || typeof time !== 'number' || !Number.isFinite(time)) return undefined;
  return { seq, from, name, text, time };
}

function resume(v: unknown): Resume | undefined {
  if (!isObj(v)) return undefined;
  const id = str(v, 'id');
  const secret = str(v, 'secret');
  if (id === undefined || secret === undefined) return undefined;
  return { id, secret };
}

function iceServers(v: unknown): IceServer[] {
  if (!Array.isArray(v)) return [];
  const out: IceServer[] = [];
  for (const s of v) {
    if (!isObj(s)) continue;
    const urls = s['urls'];
    const ok =
      typeof urls === 'string' ||
      (Array.isArray(urls) && urls.length > 0 && urls.every((u) => typeof u === 'string'));
    if (!ok) continue;
    const server: IceServer = { urls: urls as string | string[] };
    const username = str(s, 'username');
    const credential = str(s, 'credential');
    if (username !== undefined) server.username = username;
    if (credential !== undefined) server.credential = credential;
    out.push(server);
  }
  return out;
}

function candidate(v: unknown): IceCandidateInit | null | undefined {
  if (v === null) return null;
  if (!isObj(v)) return undefined;
  const c: IceCandidateInit = {};
  const cand = str(v, 'candidate');
  if (cand !== undefined) c.candidate = cand;
  const mid = v['sdpMid'];
  if (typeof mid === 'string' || mid === null) c.sdpMid = mid;
  const idx = v['sdpMLineIndex'];
  if (typeof idx === 'number' || idx === null) c.sdpMLineIndex = idx;
  const ufrag = v['usernameFragment'];
  if (typeof ufrag === 'string' || ufrag === null) c.usernameFragment = ufrag;
  return c;
}

/** A Last N value: an integer ≥ -1 (`-1` = unlimited). */
export function isLastN(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= -1;
}

/**
 * A list of participant ids. A missing field or `null` (what Go encodes for a
 * nil slice) is the empty list; non-string entries are dropped; anything else
 * is invalid (undefined).
 */
function idList(v: unknown): string[] | undefined {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) return undefined;
  return v.filter((x): x is string => typeof x === 'string' && x !== '');
}

/**
 * A Last N field: an integer ≥ -1; a missing one is -1 (unknown / unlimited),
 * a present but invalid one makes the message invalid (undefined).
 */
function lastNField(o: Obj, k: string): number | undefined {
  const v = o[k];
  if (v === undefined || v === null) return -1;
  return isLastN(v) ? v : undefined;
}

/** A bit rate or a count: a finite number ≥ 0. */
function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0;
}

/** A layer index: an integer ≥ -1 (`-1` = none). */
function isLayer(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= -1;
}

/**
 * A numeric field: a missing one (or `null`) is `missing`, a present but
 * invalid one makes the caller's value invalid (undefined).
 */
function numField(o: Obj, k: string, valid: (v: unknown) => v is number, missing: number): number | undefined {
  const v = o[k];
  if (v === undefined || v === null) return missing;
  return valid(v) ? v : undefined;
}

function videoStats(v: unknown): VideoStats | undefined {
  if (!isObj(v)) return undefined;
  const encoding = numField(v, 'encoding', isLayer, -1);
  const temporal = numField(v, 'temporal', isLayer, -1);
  const bitrate = numField(v, 'bitrate', isCount, 0);
  if (encoding === undefined || temporal === undefined || bitrate === undefined) return undefined;
  return { encoding, temporal, bitrate, suspended: bool(v, 'suspended') };
}

/**
 * `stats.videos`: a missing field or `null` (Go's nil map) is empty; invalid
 * entries are dropped; anything but an object is invalid (undefined).
 */
function videoStatsMap(v: unknown): Record<string, VideoStats> | undefined {
  if (v === undefined || v === null) return {};
  if (!isObj(v)) return undefined;
  const entries: [string, VideoStats][] = [];
  for (const [id, e] of Object.entries(v)) {
    const s = videoStats(e);
    if (id !== '' && s !== undefined) entries.push([id, s]);
  }
  // fromEntries defines own properties: an id such as "__proto__" stays data.
  return Object.fromEntries(entries);
}

/**
 * Parses one text frame from the server. Returns undefined for frames that are
 * not JSON objects, have an unknown `type` (the protocol reserves names for
 * later additions; clients ignore them) or lack required fields.
 */
export function parseServerMessage(text: string): ServerMessage | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObj(v)) return undefined;
  switch (v['type']) {
    case 'welcome': {
      const id = str(v, 'id');
      const res = resume(v['resume']);
      if (id === undefined || res === undefined) return undefined;
      const ps = Array.isArray(v['participants']) ? v['participants'] : [];
      return {
        type: 'welcome',
        version: typeof v['version'] === 'number' ? v['version'] : PROTOCOL_VERSION,
        id,
        room: str(v, 'room') ?? '',
        resume: res,
        participants: ps.map(participant).filter((p): p is Participant => p !== undefined),
        iceServers: iceServers(v['iceServers']),
        ...(typeof v['participantCount'] === 'number' ? { participantCount: v['participantCount'] } : {}),
        ...(typeof v['node'] === 'string' ? { node: v['node'] } : {}),
        ...(Array.isArray(v['fallbacks']) ? { fallbacks: v['fallbacks'].filter((u): u is string => typeof u === 'string') } : {}),
        ...(isObj(v['permissions'])
          ? {
              permissions: {
                publish: bool(v['permissions'], 'publish'),
                subscribe: bool(v['permissions'], 'subscribe'),
                admin: bool(v['permissions'], 'admin'),
              },
            }
          : {}),
      };
    }
    case 'offer':
    case 'answer': {
      const pc = pcName(v);
      const sdp = str(v, 'sdp');
      if (pc === undefined || sdp === undefined) return undefined;
      return { type: v['type'], pc, sdp };
    }
    case 'candidate': {
      const pc = pcName(v);
      const c = candidate(v['candidate']);
      if (pc === undefined || c === undefined) return undefined;
      return { type: 'candidate', pc, candidate: c };
    }
    case 'participant-joined':
    case 'participant-updated': {
      const p = participant(v['participant']);
      if (p === undefined) return undefined;
      return { type: v['type'], participant: p };
    }
    case 'participant-left': {
      const id = str(v, 'id');
      if (id === undefined) return undefined;
      return { type: 'participant-left', id };
    }
    case 'participants':
    case 'participant-page': {
      const ps = Array.isArray(v['participants']) ? v['participants'].map(participant).filter((p): p is Participant => p !== undefined) : [];
      const count = typeof v['count'] === 'number' ? v['count'] : 0;
      if (v['type'] === 'participants') {
        const left = Array.isArray(v['left']) ? v['left'].filter((id): id is string => typeof id === 'string') : [];
        return { type: 'participants', participants: ps, left, count };
      }
      return { type: 'participant-page', cursor: str(v, 'cursor') ?? '', participants: ps, next: str(v, 'next') ?? '', count };
    }
    case 'pong':
      return { type: 'pong', ts: typeof v['ts'] === 'number' ? v['ts'] : 0 };
    case 'error':
      return {
        type: 'error',
        code: str(v, 'code') ?? 'unknown',
        message: str(v, 'message') ?? '',
        fatal: bool(v, 'fatal'),
      };
    case 'bye':
      return { type: 'bye', reason: str(v, 'reason') ?? '' };
    case 'speaker': {
      // A missing id is "nobody" (the same as "").
      const id = v['id'] === undefined || v['id'] === null ? '' : str(v, 'id');
      if (id === undefined) return undefined;
      return { type: 'speaker', id };
    }
    case 'audio-slots': {
      // One entry per slot, "" for an empty one (idList would drop those).
      const ids = v['ids'];
      if (!Array.isArray(ids) || ids.length > 16 || !ids.every((x) => typeof x === 'string')) return undefined;
      return { type: 'audio-slots', ids: ids as string[] };
    }
    case 'forwarded': {
      const ids = idList(v['ids']);
      const lastN = lastNField(v, 'lastN');
      if (ids === undefined || lastN === undefined) return undefined;
      return { type: 'forwarded', ids: [...new Set(ids)], lastN };
    }
    case 'pause-video':
    case 'resume-video':
      return { type: v['type'] };
    case 'room': {
      const onStage = idList(v['onStage']);
      const lastN = lastNField(v, 'lastN');
      if (onStage === undefined || lastN === undefined) return undefined;
      return { type: 'room', lastN, onStage: [...new Set(onStage)] };
    }
    case 'layers': {
      // A missing list is malformed (it would silently turn every encoding
      // off); `null` is Go's nil slice, the empty list.
      if (v['active'] === undefined) return undefined;
      const active = idList(v['active']);
      if (active === undefined) return undefined;
      return { type: 'layers', active: [...new Set(active)] };
    }
    case 'suspended': {
      const ids = idList(v['ids']);
      if (ids === undefined) return undefined;
      return { type: 'suspended', ids: [...new Set(ids)] };
    }
    case 'chat': {
      const entry = chatEntry(v);
      return entry && { type: 'chat', ...entry };
    }
    case 'chat-history': {
      const list = v['messages'];
      if (list !== undefined && list !== null && !Array.isArray(list)) return undefined;
      const messages = (list ?? []).map(chatEntry).filter((e: ChatEntry | undefined): e is ChatEntry => e !== undefined);
      return { type: 'chat-history', messages };
    }
    case 'p2p': {
      const epoch = v['epoch'];
      if (typeof epoch !== 'number' || !Number.isInteger(epoch) || epoch < 0) return undefined;
      const on = bool(v, 'on');
      const peer = str(v, 'peer');
      if (on && !peer) return undefined;
      const msg: P2PMessage = { type: 'p2p', on, epoch };
      if (peer) msg.peer = peer;
      if (bool(v, 'initiator')) msg.initiator = true;
      const reason = str(v, 'reason');
      if (reason) msg.reason = reason;
      return msg;
    }
    case 'p2p-offer':
    case 'p2p-answer':
    case 'p2p-candidate': {
      const epoch = v['epoch'];
      const from = str(v, 'from');
      if (typeof epoch !== 'number' || !Number.isInteger(epoch) || !from) return undefined;
      if (v['type'] === 'p2p-candidate') {
        const c = v['candidate'] === undefined ? null : candidate(v['candidate']);
        if (c === undefined) return undefined;
        return { type: 'p2p-candidate', from, epoch, candidate: c };
      }
      const sdp = str(v, 'sdp');
      if (!sdp) return undefined;
      return { type: v['type'], from, epoch, sdp };
    }
    case 'stats': {
      const estimate = numField(v, 'estimate', isCount, 0);
      const allocated = numField(v, 'allocated', isCount, 0);
      const switches = numField(v, 'switches', isCount, 0);
      const videos = videoStatsMap(v['videos']);
      if (estimate === undefined || allocated === undefined || switches === undefined || videos === undefined) {
        return undefined;
      }
      return { type: 'stats', estimate, allocated, switches, videos };
    }
    default:
      return undefined;
  }
}
