// Fakes for the protocol layer's environment: clock, WebSocket, peer
// connection, media tracks and streams.

import type {
  Clock,
  IceCandidateLike,
  PeerConnectionConfig,
  PeerConnectionLike,
  SenderLike,
  SendParametersLike,
  SessionDescriptionLike,
  StatsReportLike,
  TrackEventLike,
  TransceiverLike,
  WebSocketLike,
} from '../src/protocol/env';
import type { IceCandidateInit } from '../src/protocol/messages';

// ---- clock -----------------------------------------------------------------

interface Timer {
  id: number;
  at: number;
  fn: () => void;
}

export class FakeClock implements Clock {
  private t = 1_000_000;
  private nextId = 1;
  private timers: Timer[] = [];

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): number {
    const id = this.nextId++;
    this.timers.push({ id, at: this.t + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.timers = this.timers.filter((x) => x.id !== handle);
  }

  /** Advances time, firing due timers in order (including ones they schedule). */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      const due = this.timers
        .filter((x) => x.at <= end)
        .sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.timers = this.timers.filter((x) => x !== due);
      this.t = due.at;
      due.fn();
    }
    this.t = end;
  }

  get pending(): number {
    return this.timers.length;
  }
}

// ---- WebSocket -------------------------------------------------------------

export class FakeWebSocket implements WebSocketLike {
  readyState = 0;
  readonly sent: Record<string, unknown>[] = [];
  closedByClient: number | undefined;
  onopen: ((ev: unknown) => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: ((ev: { code: number; reason: string }) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;

  constructor(readonly url: string) {}

  send(data: string): void {
    if (this.readyState !== 1) throw new Error('send on a socket that is not open');
    this.sent.push(JSON.parse(data) as Record<string, unknown>);
  }

  close(code?: number): void {
    this.closedByClient = code ?? 1005;
    this.readyState = 3;
  }

  // server side

  open(): void {
    this.readyState = 1;
    this.onopen?.({});
  }

  receive(msg: unknown): void {
    this.onmessage?.({ data: typeof msg === 'string' ? msg : JSON.stringify(msg) });
  }

  serverClose(code = 1006, reason = ''): void {
    this.readyState = 3;
    this.onclose?.({ code, reason });
  }

  sentOfType(type: string): Record<string, unknown>[] {
    return this.sent.filter((m) => m['type'] === type);
  }
}

// ---- media -----------------------------------------------------------------

export class FakeTrack extends EventTarget {
  enabled = true;
  /** What getSettings() reports (a camera's capture size); absent = no getSettings. */
  settings: { width?: number; height?: number } | null = null;
  constructor(
    readonly kind: 'audio' | 'video',
    readonly id: string,
  ) {
    super();
  }
  get getSettings(): (() => { width?: number; height?: number }) | undefined {
    const s = this.settings;
    return s ? () => ({ ...s }) : undefined;
  }
  end(): void {
    this.dispatchEvent(new Event('ended'));
  }
}

export class FakeStream extends EventTarget {
  private tracks: FakeTrack[];
  constructor(
    readonly id: string,
    tracks: FakeTrack[] = [],
  ) {
    super();
    this.tracks = [...tracks];
  }
  getTracks(): FakeTrack[] {
    return [...this.tracks];
  }
  getAudioTracks(): FakeTrack[] {
    return this.tracks.filter((t) => t.kind === 'audio');
  }
  getVideoTracks(): FakeTrack[] {
    return this.tracks.filter((t) => t.kind === 'video');
  }
  addTrack(t: FakeTrack): void {
    this.tracks.push(t);
  }
  removeTrack(t: FakeTrack): void {
    this.tracks = this.tracks.filter((x) => x !== t);
  }
  /** What the browser does when a renegotiation removes a remote track. */
  removeTrackRemotely(t: FakeTrack): void {
    this.tracks = this.tracks.filter((x) => x !== t);
    const ev = new Event('removetrack') as Event & { track: FakeTrack };
    ev.track = t;
    this.dispatchEvent(ev);
  }
}

export function asTrack(t: FakeTrack): MediaStreamTrack {
  return t as unknown as MediaStreamTrack;
}

export function asStream(s: FakeStream): MediaStream {
  return s as unknown as MediaStream;
}

// ---- peer connection -------------------------------------------------------

export class Deferred<T = void> {
  resolve!: (v: T) => void;
  reject!: (e: unknown) => void;
  readonly promise = new Promise<T>((res, rej) => {
    this.resolve = res;
    this.reject = rej;
  });
}

/** RTCRtpSender's parameters: getParameters returns a copy, setParameters records one. */
export class FakeSender implements SenderLike {
  private params: SendParametersLike;
  private serial = 0;
  readonly setCalls: SendParametersLike[] = [];
  /** When set, setParameters rejects with it. */
  failSet: Error | null = null;

  constructor(encodings: RTCRtpEncodingParameters[] | undefined) {
    this.params = {
      transactionId: 't0',
      encodings: (encodings ?? [{}]).map((e) => ({ active: true, ...e })),
    };
  }

  getParameters(): SendParametersLike {
    this.params.transactionId = `t${++this.serial}`;
    return structuredClone(this.params);
  }

  async setParameters(p: SendParametersLike): Promise<void> {
    this.setCalls.push(structuredClone(p));
    if (this.failSet) throw this.failSet;
    if (p.transactionId !== this.params.transactionId) throw new Error('stale transactionId');
    this.params = structuredClone(p);
  }

  /** Every track given to replaceTrack, in order. */
  readonly replaced: unknown[] = [];

  async replaceTrack(track: MediaStreamTrack | null): Promise<void> {
    this.replaced.push(track);
  }

  /** The `active` flags of the encodings currently in force. */
  get active(): (boolean | undefined)[] {
    return this.params.encodings.map((e) => e.active);
  }
}

export interface AddedTransceiver {
  trackOrKind: unknown;
  init: RTCRtpTransceiverInit | undefined;
  codecPreferences: unknown[] | null;
  sender: FakeSender;
}

export class FakePeerConnection implements PeerConnectionLike {
  static created: FakePeerConnection[] = [];
  private static serial = 0;

  connectionState: RTCPeerConnectionState = 'new';
  onicecandidate: ((ev: { readonly candidate: IceCandidateLike | null }) => void) | null = null;
  ontrack: ((ev: TrackEventLike) => void) | null = null;
  onconnectionstatechange: ((ev: unknown) => void) | null = null;

  readonly transceivers: AddedTransceiver[] = [];
  readonly localDescriptions: SessionDescriptionLike[] = [];
  readonly remoteDescriptions: SessionDescriptionLike[] = [];
  readonly addedCandidates: (IceCandidateInit | undefined)[] = [];
  closed = false;
  stats: Record<string, unknown>[] = [];
  /** When set, the next setRemoteDescription waits for it. */
  holdRemote: Deferred | null = null;
  failRemote = false;
  /** When it returns true for a transceiver's sendEncodings, addTransceiver throws (as browsers do). */
  rejectEncodings: ((encodings: RTCRtpEncodingParameters[]) => boolean) | null = null;
  /** sendEncodings of every addTransceiver call, including rejected ones. */
  readonly encodingAttempts: (RTCRtpEncodingParameters[] | undefined)[] = [];
  private readonly n = ++FakePeerConnection.serial;

  constructor(readonly config: PeerConnectionConfig) {
    FakePeerConnection.created.push(this);
  }

  addTransceiver(trackOrKind: unknown, init?: RTCRtpTransceiverInit): TransceiverLike {
    this.encodingAttempts.push(init?.sendEncodings);
    if (init?.sendEncodings && this.rejectEncodings?.(init.sendEncodings)) {
      throw new DOMException('unsupported encodings', 'OperationError');
    }
    const sender = new FakeSender(init?.sendEncodings);
    const rec: AddedTransceiver = { trackOrKind, init, codecPreferences: null, sender };
    this.transceivers.push(rec);
    return {
      mid: String(this.transceivers.length - 1),
      sender,
      setCodecPreferences: (codecs) => {
        rec.codecPreferences = codecs;
      },
    };
  }

  async createOffer(): Promise<SessionDescriptionLike> {
    return { type: 'offer', sdp: `offer-sdp-${this.n}` };
  }

  async createAnswer(): Promise<SessionDescriptionLike> {
    return { type: 'answer', sdp: `answer-sdp-${this.n}-${this.remoteDescriptions.length}` };
  }

  async setLocalDescription(desc: SessionDescriptionLike): Promise<void> {
    this.localDescriptions.push(desc);
  }

  async setRemoteDescription(desc: SessionDescriptionLike): Promise<void> {
    const hold = this.holdRemote;
    this.holdRemote = null;
    if (hold) await hold.promise;
    if (this.failRemote) throw new Error('bad sdp');
    this.remoteDescriptions.push(desc);
  }

  async addIceCandidate(candidate?: IceCandidateInit): Promise<void> {
    if (this.remoteDescriptions.length === 0) {
      throw new Error('addIceCandidate before setRemoteDescription');
    }
    this.addedCandidates.push(candidate);
  }

  async getStats(): Promise<StatsReportLike> {
    const m = new Map(this.stats.map((s, i) => [String(i), s]));
    return { forEach: (cb) => m.forEach((v) => cb(v)) };
  }

  close(): void {
    this.closed = true;
    this.connectionState = 'closed';
  }

  // test side

  setState(state: RTCPeerConnectionState): void {
    this.connectionState = state;
    this.onconnectionstatechange?.({});
  }

  emitCandidate(c: IceCandidateInit | null): void {
    const cand: IceCandidateLike | null =
      c === null
        ? null
        : {
            candidate: c.candidate ?? '',
            sdpMid: c.sdpMid ?? null,
            sdpMLineIndex: c.sdpMLineIndex ?? null,
          };
    this.onicecandidate?.({ candidate: cand });
  }

  fireTrack(track: FakeTrack, streams: FakeStream[], mid: string | null = null): void {
    this.ontrack?.({
      track: asTrack(track),
      streams: streams.map(asStream),
      transceiver: { mid },
    });
  }
}

/** Lets pending promise chains (fake async pc methods) run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}
