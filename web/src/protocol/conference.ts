// Conference: one participant's session with the Podium SFU (docs/protocol.md).
//
// It owns the signaling WebSocket and the two peer connections (publish and
// subscribe), keeps the participant list and the remote tracks, and emits
// typed events. It reconnects by itself, resuming the same participant id.
// It has no UI and reads neither the clock nor the browser globals directly
// when the corresponding options are given.

import { ChatLog, chatTextProblem } from './chat';
import { Constraints, type VideoConstraints } from './constraints';
import { Emitter } from './emitter';
import {
  browserPeerConnection,
  browserWebSocket,
  defaultSignalingUrl,
  realClock,
  WS_OPEN,
  type Clock,
  type PeerConnectionConfig,
  type StatsReportLike,
  type TimerHandle,
  type WebSocketLike,
} from './env';
import {
  isLastN,
  parseServerMessage,
  PROTOCOL_VERSION,
  type BandwidthStats,
  type ChatEntry,
  type ClientMessage,
  type ErrorMessage,
  type JoinMessage,
  type Participant,
  type PcName,
  type Resume,
  type ServerMessage,
  type VideoConstraint,
  type WelcomeMessage,
} from './messages';
import { encodingActive, senderEncodings } from './encodings';
import { Direct } from './direct';
import { Forwarding } from './forwarding';
import type { P2PState, Progress } from './p2p';
import { PeerLink } from './peer';
import { Pins } from './pins';
import { Roster } from './roster';
import { publishLocal, publishScreen } from './publish';
import { RemoteMedia } from './remote';
import { SendLayers } from './sendlayers';
import { MAX_REDIRECTS, parseFallbacks, parseRedirect, reconnectUrl, withRegion, type RedirectMessage } from './redirect';
import { Session } from './session';
import { stopScreenTransceivers } from './screen';
import { inboundStats, outboundStats, uplinkEstimate, type ConferenceStats, type TrackRef } from './stats';
import type {
  BackoffOptions,
  CloseReason,
  ConferenceEvents,
  ConferenceOptions,
  ConnectionState,
  LocalState,
  Logger,
  RemoteTracks,
  RoomSettings,
  RoomSettingsChange,
} from './api';

export type * from './api';
export type { VideoConstraints } from './constraints';
export { SIMULCAST_ENCODINGS, SINGLE_ENCODING_MAX_BITRATE, simulcastLayerLimit } from './encodings';

/** Error codes with which the server refuses a publish offer (it is not applied). */
const SHARE_REFUSALS = new Set(['too-many-tracks', 'bad-sdp', 'forbidden']);

const consoleLogger: Logger = {
  debug: () => {},
  warn: (...args) => console.warn('[podium]', ...args),
};

export class Conference {
  readonly room: string;
  readonly name: string;

  private readonly opts: ConferenceOptions;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly backoff: BackoffOptions;
  private readonly emitter: Emitter<ConferenceEvents>;

  private session: Session | null = null;
  private connState: ConnectionState = 'idle';
  private ownId: string | null = null;
  private count = 0; // participants in the room, us included
  private resume: Resume | null = null;
  private everWelcomed = false;
  private terminal = false;
  private attempt = 0;
  /**
   * The bridge: the URL a cluster redirect sent us to, or that last welcomed
   * us (docs/cluster.md); redirects since the last welcome; the welcome's
   * other nodes to fail over to; the URL of the session being opened.
   */
  private redirectUrl: string | null = null;
  private redirects = 0;
  private fallbacks: string[] = [];
  private sessionUrl = '';
  private reconnectTimer: TimerHandle | null = null;
  private lastRtt: number | null = null;

  private local: LocalState = { audioMuted: false, videoMuted: false, handRaised: false };
  private readonly chatLog = new ChatLog();

  // Speaker, Last N and video pausing (docs/protocol.md).
  private readonly forwarding: Forwarding;
  /** Our pins and Last N, restated after every welcome. */
  private readonly pins = new Pins();
  /** Pause and `layers`: which video encodings we send. */
  private readonly sendLayers: SendLayers;
  /** Our constraints per remote source (setConstraints), and what this session was told. */
  private readonly videoWants = new Constraints();
  private readonly localStream: MediaStream | null;
  /** The screen or window we share (startScreenShare); null when not sharing. */
  private screenStream: MediaStream | null = null;

  private readonly people: Roster;
  private readonly media: RemoteMedia;
  /** Hybrid P2P: the direct connection to the one other participant (direct.ts). */
  private readonly direct: Direct;

  constructor(opts: ConferenceOptions) {
    this.opts = opts;
    this.room = opts.room;
    this.name = opts.name;
    this.localStream = opts.localStream ?? null;
    this.clock = opts.clock ?? realClock;
    this.log = opts.logger ?? consoleLogger;
    this.backoff = { initialMs: 300, factor: 2, maxMs: 3000, ...opts.backoff };
    this.emitter = new Emitter((err) => this.log.warn('event listener threw', err));
    // While a participant's media is shown from the direct connection, the
    // SFU's tracks of it come and go unseen (shown again when leaving P2P).
    const sfuEvents: Pick<Emitter<ConferenceEvents>, 'emit'> = {
      emit: (type, ev) => {
        const id = (ev as { participantId?: string }).participantId;
        if (id !== undefined && id === this.direct.renderedPeer) return;
        this.emitter.emit(type, ev);
      },
    };
    this.media = new RemoteMedia(sfuEvents, this.log, opts.e2ee ? (r, ref) => this.bindReceiver(r, ref) : null);
    this.direct = this.createDirect();
    this.sendLayers = new SendLayers(opts.layerLimit, this.localStream, this.log);
    this.forwarding = new Forwarding(this.emitter);
    this.people = new Roster(this.emitter);
  }

  // ---- public API ----------------------------------------------------------

  on<K extends keyof ConferenceEvents>(
    type: K,
    fn: (event: ConferenceEvents[K]) => void,
  ): () => void {
    return this.emitter.on(type, fn);
  }

  off<K extends keyof ConferenceEvents>(type: K, fn: (event: ConferenceEvents[K]) => void): void {
    this.emitter.off(type, fn);
  }

  /** Own participant id from the last `welcome`, or null before the first one. */
  get id(): string | null {
    return this.ownId;
  }

  get state(): ConnectionState {
    return this.connState;
  }

  get localState(): LocalState {
    return { ...this.local };
  }

  /** Round-trip time of the last ping, in ms. */
  get rtt(): number | null {
    return this.lastRtt;
  }

  /** The other participants the room lists, by id (a big room lists only some: see participantCount). */
  get participants(): ReadonlyMap<string, Participant> {
    return this.people.all;
  }

  /** How many are in the room, us included; 0 before the first welcome. */
  get participantCount(): number {
    return this.count;
  }

  /** Asks for the page of everyone in the room after `cursor` ("": the first); it comes as `participant-page`. */
  listParticipants(cursor = ''): void {
    const s = this.session;
    if (s?.welcomed && !this.terminal) s.send({ type: 'list-participants', cursor });
  }

  /** The dominant speaker from the last `speaker` message (may be our own id); null = nobody / unknown. */
  get dominantSpeaker(): string | null {
    return this.forwarding.speaker;
  }

  /**
   * Ids whose video we receive, in priority order, from the last `forwarded`
   * message; null until one arrives (then every participant's video may flow).
   */
  get forwarded(): string[] | null {
    return this.forwarding.forwarded;
  }

  /** The N in force for us, from the last `forwarded` message; null until one arrives. */
  get forwardedLastN(): number | null {
    return this.forwarding.lastN;
  }

  /** Whether we receive this participant's video (true while no `forwarded` arrived yet). */
  isForwarded(participantId: string): boolean {
    return this.forwarding.isForwarded(participantId);
  }

  /** Our own pins, in the order given. They survive reconnects (re-sent after each welcome). */
  get pinned(): string[] {
    return this.pins.list;
  }

  /** The value given to setLastN(), or null when never set (the room's N applies). */
  get lastN(): number | null {
    return this.pins.lastN;
  }

  /** The room's settings from the last `room` message; null until one arrives. */
  get roomSettings(): RoomSettings | null {
    return this.forwarding.room;
  }

  /** Whether our video is paused because nobody receives it (`pause-video`). */
  get videoPaused(): boolean {
    return this.sendLayers.isPaused;
  }

  /**
   * The simulcast RIDs the server wants us to send, from the last `layers` of
   * this session; null = all (no `layers` yet). `videoPaused` still wins.
   */
  get videoLayers(): string[] | null {
    return this.sendLayers.active;
  }

  /**
   * Ids of forwarded videos the SFU suspended for lack of bandwidth, from the
   * last `suspended` of this session (empty until one arrives).
   */
  get suspended(): string[] {
    return this.forwarding.suspended;
  }

  /** Whether the SFU suspended this participant's video for lack of bandwidth. */
  isSuspended(participantId: string): boolean {
    return this.forwarding.isSuspended(participantId);
  }

  /** The SFU's bandwidth estimate and allocation from the last `stats` of this session; null before one. */
  get bandwidth(): BandwidthStats | null {
    return this.forwarding.bandwidth;
  }

  /** Our constraints per remote participant, as given to setConstraints() (participants who left are dropped). */
  get constraints(): VideoConstraints {
    return this.videoWants.wantedCopy;
  }

  /** What the server has been told in this session: the merge of the `constraints` messages sent. */
  get constraintsSent(): VideoConstraints {
    return this.videoWants.sentCopy;
  }

  /**
   * Reports what we render of remote videos: size in device pixels (rounded)
   * and role. Merged into our constraints; size changes are collected for
   * `constraintsDelayMs` and then sent in one `constraints` message holding
   * only the participants whose constraint changed; a role change (to or from
   * the stage) is sent at once. After a reconnect all of
   * them are sent again. Throws on a negative or non-finite size or an unknown role.
   */
  setConstraints(videos: VideoConstraints | ReadonlyMap<string, VideoConstraint>): void {
    const next = Constraints.normalize(videos);
    if (this.terminal) return;
    const { changed, roleChanged } = this.videoWants.merge(next, (id) => id === '' || id === this.ownId);
    const s = this.session;
    if (!changed || !s?.welcomed) return;
    // A video moving to or from the stage is a user's request for a new layer:
    // sent at once. Resizes are collected, they come in bursts.
    if (roleChanged) {
      if (s.constraintsTimer !== null) {
        this.clock.clearTimeout(s.constraintsTimer);
        s.constraintsTimer = null;
      }
      this.flushConstraints(s);
      return;
    }
    this.scheduleConstraints(s);
  }

  /** Always receive this participant's video (appended to our pins). No effect on our own id. */
  pin(participantId: string): void {
    if (this.terminal || participantId === '' || participantId === this.ownId) return;
    if (!this.pins.add(participantId)) return;
    const s = this.session;
    if (s?.welcomed) s.send({ type: 'pin', id: participantId });
    this.emitter.emit('pinned', { ids: this.pinned });
  }

  /** Stops always receiving this participant's video. */
  unpin(participantId: string): void {
    if (this.terminal) return;
    const s = this.session;
    if (!this.pins.remove(participantId, !!s?.welcomed)) return;
    if (s?.welcomed) s.send({ type: 'unpin', id: participantId });
    this.emitter.emit('pinned', { ids: this.pinned });
  }

  /**
   * The most videos we want to receive: an integer ≥ 0, or -1 for "as many as
   * the room allows". Kept and re-sent after every welcome.
   */
  setLastN(n: number): void {
    if (!isLastN(n)) throw new RangeError(`Conference.setLastN: ${n} is not an integer ≥ -1`);
    if (this.terminal) return;
    this.pins.lastN = n;
    const s = this.session;
    if (s?.welcomed) s.send({ type: 'set-last-n', n });
  }

  /**
   * Changes the room's Last N and/or on-stage set (`room-settings`); the new
   * values arrive as a `room` event. Returns false when not connected (nothing
   * is queued: room settings are not ours to replay).
   */
  setRoomSettings(change: RoomSettingsChange): boolean {
    const msg: ClientMessage = { type: 'room-settings' };
    if (change.lastN !== undefined) {
      if (!isLastN(change.lastN)) {
        throw new RangeError(`Conference.setRoomSettings: lastN ${change.lastN} is not an integer ≥ -1`);
      }
      msg.lastN = change.lastN;
    }
    if (change.onStage !== undefined) {
      if (!Array.isArray(change.onStage) || !change.onStage.every((x) => typeof x === 'string')) {
        throw new TypeError('Conference.setRoomSettings: onStage must be an array of ids');
      }
      msg.onStage = [...change.onStage];
    }
    const s = this.session;
    if (this.terminal || !s?.welcomed || s.ws.readyState !== WS_OPEN) return false;
    s.send(msg);
    return true;
  }

  /**
   * Shares a screen or window (a getDisplayMedia stream): its video, and its
   * audio when it has some, are published next to camera and microphone as a
   * source of their own (`Participant.screen` at the others), on stage for
   * everyone. Kept across reconnects until stopScreenShare(). The caller owns
   * the stream (and stops its tracks); a running share is replaced.
   */
  startScreenShare(stream: MediaStream): void {
    if (this.terminal || stream.getVideoTracks().length === 0) return;
    const s = this.session;
    if (this.screenStream && s?.screen) {
      stopScreenTransceivers(s.screen);
      s.screen = null;
    }
    this.screenStream = stream;
    if (s?.welcomed && s.publish) {
      s.screen = publishScreen(s.publish.pc, stream, this.opts, this.log);
      s.offerPublish();
    }
    this.emitter.emit('screen-share', { sharing: true });
  }

  /** Ends the screen share for everyone (the server stops forwarding it at the next offer). */
  stopScreenShare(): void {
    if (!this.screenStream) return;
    this.screenStream = null;
    const s = this.session;
    if (s?.screen) {
      stopScreenTransceivers(s.screen);
      s.screen = null;
      s.offerPublish();
    }
    this.emitter.emit('screen-share', { sharing: false });
  }

  /** The stream we share; null when not sharing. */
  get screenShare(): MediaStream | null {
    return this.screenStream;
  }

  /** Current remote tracks of a participant (from the direct connection while it is shown). */
  tracks(participantId: string): RemoteTracks {
    if (participantId === this.direct.renderedPeer) return this.direct.tracks;
    return this.media.get(participantId);
  }

  /** Hybrid P2P: the direct connection's phase, epoch and peer. */
  get p2p(): P2PState {
    return this.direct.current;
  }

  /** Hybrid P2P: the direct connection (for stats and tests); null when there is none. */
  get p2pPeerConnection(): RTCPeerConnection | null {
    return this.direct.peerConnection;
  }

  /** Connects and joins the room. Call once. */
  join(): void {
    if (this.connState !== 'idle') throw new Error('Conference.join: already started');
    this.setState('connecting');
    this.openSession();
  }

  /** Leaves the room for good. */
  leave(): void {
    if (this.terminal) return;
    if (this.session) this.session.send({ type: 'leave' });
    this.terminate('left', 'left the room');
  }

  /** Sets the local microphone / camera muted state (true = muted). */
  mute(audio: boolean, video: boolean): void {
    this.local = { ...this.local, audioMuted: audio, videoMuted: video };
    this.applyLocalEnabled();
    const s = this.session;
    if (s?.welcomed) s.send({ type: 'mute', audio, video });
    this.emitter.emit('local-state', this.localState);
  }

  /** Raises or lowers our hand; restated after a reconnect. */
  raiseHand(raised: boolean): void {
    if (this.local.handRaised === raised) return;
    this.local = { ...this.local, handRaised: raised };
    const s = this.session;
    if (s?.welcomed) s.send({ type: 'raise-hand', raised });
    this.emitter.emit('local-state', this.localState);
  }

  /**
   * Posts a chat message. Returns why it was not sent ("" when it was): text
   * the server would refuse, or no session. It shows up as a `chat` event once
   * the server relays it.
   */
  sendChat(text: string): string {
    const problem = chatTextProblem(text);
    if (problem) return problem;
    const s = this.session;
    if (!s?.welcomed || s.ws.readyState !== WS_OPEN) return 'not connected';
    s.send({ type: 'chat', text });
    return '';
  }

  /** The room's chat as known here, oldest first. */
  get chat(): ChatEntry[] {
    return this.chatLog.messages;
  }

  /**
   * Publishes another camera or microphone track in place of the current one
   * of its kind: RTCRtpSender.replaceTrack on the live session (no new offer,
   * same participant id; simulcast encodings are kept, and which of them are
   * active follows the new capture size), and the local stream takes it for
   * later sessions. Returns the track it replaced, which the caller stops.
   */
  async replaceLocalTrack(track: MediaStreamTrack): Promise<MediaStreamTrack | null> {
    const stream = this.localStream;
    if (!stream) throw new Error('replaceLocalTrack: the conference has no local stream');
    const kind = track.kind === 'audio' ? 'audio' : 'video';
    const old = (kind === 'audio' ? stream.getAudioTracks() : stream.getVideoTracks())[0] ?? null;
    if (old === track) return null;
    if (old) stream.removeTrack(old);
    stream.addTrack(track);
    this.applyLocalEnabled();
    const s = this.session;
    const sender = kind === 'audio' ? s?.audioSender : s?.videoSender;
    if (s && sender?.replaceTrack) {
      await sender.replaceTrack(track);
      if (kind === 'video') this.applySendActive(s);
    }
    this.direct.replaceTrack(track);
    return old;
  }

  /** Inbound stats per remote participant and outbound stats of the publish connection. */
  async stats(): Promise<ConferenceStats> {
    const s = this.session;
    const result: ConferenceStats = { timestamp: this.clock.now(), inbound: [], outbound: [], uplinkEstimate: 0 };
    if (!s) return result;
    const [sub, pub] = await Promise.all([
      s.subscribe ? this.boundedStats(s.subscribe.pc) : null,
      s.publish ? this.boundedStats(s.publish.pc) : null,
    ]);
    if (sub) result.inbound = inboundStats(sub, (t, mid) => this.media.resolveStats(t, mid));
    // The peer shown from the direct connection: its rows come from there.
    const peer = this.direct.renderedPeer;
    const dpc = this.direct.peerConnection;
    if (peer !== null && dpc) {
      const direct = await this.boundedStats(dpc);
      const tracks = this.direct.tracks;
      if (direct) {
        result.inbound = result.inbound.filter((r) => r.participantId !== peer);
        result.inbound.push(
          ...inboundStats(direct as unknown as StatsReportLike, (t) =>
            t !== undefined && t === tracks.video?.track.id
              ? { participantId: peer, kind: 'video' }
              : t !== undefined && t === tracks.audio?.track.id
                ? { participantId: peer, kind: 'audio' }
                : undefined,
          ),
        );
      }
    }
    if (pub) {
      const encodings = senderEncodings(s.videoSender);
      result.outbound = outboundStats(
        pub,
        (kind, rid) => (kind === 'video' ? encodingActive(encodings, rid) : null),
        encodings?.map((e) => e.rid ?? '') ?? [],
      );
      result.uplinkEstimate = uplinkEstimate(pub);
    }
    return result;
  }

  /**
   * A connection's stats, or null when it fails or takes over 3 s: Firefox may
   * never settle getStats on a connection closed while it runs (a signaling
   * cut replaces both), and a caller's stats must not hang with it.
   */
  private boundedStats<T>(pc: { getStats(): Promise<T> }): Promise<T | null> {
    return new Promise((resolve) => {
      const timer = this.clock.setTimeout(() => resolve(null), 3000);
      pc.getStats().then(
        (r) => {
          this.clock.clearTimeout(timer);
          resolve(r);
        },
        () => {
          this.clock.clearTimeout(timer);
          resolve(null);
        },
      );
    });
  }

  // ---- session lifecycle ---------------------------------------------------

  /** Opens a session at `redirect`, else at the bridge or the fallback this attempt tries. */
  private openSession(redirect?: string): void {
    const bridge = this.redirectUrl ?? this.opts.url ?? withRegion(defaultSignalingUrl(), globalThis.location?.search ?? '');
    const url = redirect ?? reconnectUrl(bridge, this.fallbacks, this.attempt);
    this.sessionUrl = url;
    let ws: WebSocketLike;
    try {
      ws = (this.opts.createWebSocket ?? browserWebSocket)(url);
    } catch (err) {
      this.log.warn('cannot open signaling connection', err);
      this.scheduleReconnect('cannot open signaling connection');
      return;
    }
    const s = new Session(ws, this.clock, this.log);
    this.session = s;
    ws.onopen = () => {
      if (s !== this.session) return;
      const join: JoinMessage = {
        type: 'join',
        version: PROTOCOL_VERSION,
        room: this.room,
        name: this.name,
      };
      if (this.opts.token !== undefined) join.token = this.opts.token;
      if (this.resume) join.resume = this.resume;
      if (this.opts.e2ee) join.e2ee = true;
      // Slots change sender under a receiver, which E2EE keys by sender (remote.ts).
      else join.audioSlots = true;
      if (this.opts.audience) join.audience = true;
      s.send(join);
      this.schedulePing(s);
    };
    ws.onmessage = (ev) => {
      if (s !== this.session || typeof ev.data !== 'string') return;
      const redirect = parseRedirect(ev.data);
      if (redirect) return this.followRedirect(s, redirect);
      const msg = parseServerMessage(ev.data);
      if (!msg) {
        this.log.debug('ignored message', ev.data);
        return;
      }
      this.handle(s, msg);
    };
    ws.onclose = (ev) => {
      this.lost(s, `signaling connection closed (${ev.code}${ev.reason ? ` ${ev.reason}` : ''})`);
    };
    ws.onerror = () => {
      // A close event follows; that is where we react.
    };
    this.armWatchdog(s);
  }

  /** The node we reached is not our bridge: join again at once at the one it names. */
  private followRedirect(s: Session, rd: RedirectMessage): void {
    if (s !== this.session || this.terminal) return;
    this.teardown(s);
    if (++this.redirects > MAX_REDIRECTS) {
      this.redirectUrl = null; // start over where we began, with backoff
      this.redirects = 0;
      this.scheduleReconnect('too many redirects');
      return;
    }
    this.log.debug(`redirected to bridge ${rd.node} (region ${rd.region}: ${rd.reason})`);
    this.redirectUrl = rd.url;
    this.openSession(rd.url);
  }

  /** The session is dead but the conference is not: start over with backoff. */
  private lost(s: Session, reason: string): void {
    if (s !== this.session || this.terminal) return;
    this.log.warn('connection lost:', reason);
    this.teardown(s);
    this.scheduleReconnect(reason);
  }

  private scheduleReconnect(reason: string): void {
    this.attempt++;
    const { initialMs, factor, maxMs } = this.backoff;
    const delayMs = Math.min(initialMs * factor ** (this.attempt - 1), maxMs);
    this.setState(this.everWelcomed ? 'reconnecting' : 'connecting');
    this.emitter.emit('reconnecting', { attempt: this.attempt, delayMs, reason });
    this.reconnectTimer = this.clock.setTimeout(() => {
      this.reconnectTimer = null;
      if (!this.terminal) this.openSession();
    }, delayMs);
  }

  /** Ends the conference for good. */
  private terminate(reason: CloseReason, message: string): void {
    if (this.terminal) return;
    this.terminal = true;
    if (this.reconnectTimer !== null) {
      this.clock.clearTimeout(this.reconnectTimer);
      this.reconnectTimer = null;
    }
    if (this.session) this.teardown(this.session);
    for (const id of [...this.people.all.keys()]) this.removeParticipant(id);
    this.setState('closed');
    this.emitter.emit('closed', { reason, message });
  }

  /** Closes the WebSocket and both peer connections of a session (and the direct one). */
  private teardown(s: Session): void {
    if (this.session === s) this.session = null;
    this.direct.sessionLost();
    s.close();
    this.media.reset();
  }

  private setState(state: ConnectionState): void {
    const previous = this.connState;
    if (previous === state) return;
    this.connState = state;
    this.emitter.emit('connection-state', { state, previous });
  }

  // ---- keepalive -----------------------------------------------------------

  private schedulePing(s: Session): void {
    s.schedulePing(this.opts.pingIntervalMs ?? 5000, () => s === this.session);
  }

  /** Declares the session dead when no `pong` arrives in time. */
  private armWatchdog(s: Session): void {
    s.armWatchdog(this.opts.pongTimeoutMs ?? 12000, () => this.lost(s, 'keepalive timeout'));
  }

  // ---- message handlers ----------------------------------------------------

  private handle(s: Session, msg: ServerMessage): void {
    switch (msg.type) {
      case 'welcome':
        return this.onWelcome(s, msg);
      case 'offer':
        if (msg.pc !== 'subscribe') return this.log.warn('ignored offer for', msg.pc);
        void s.subscribe?.answerOffer(msg.sdp);
        return;
      case 'answer':
        if (msg.pc !== 'publish') return this.log.warn('ignored answer for', msg.pc);
        // Encodings may only be settable once negotiated: restate pause / layers then.
        void s.publish?.applyAnswer(msg.sdp).then(() => {
          this.applySendActive(s);
          if (s === this.session) s.publishAnswered();
        });
        return;
      case 'candidate': {
        const link = msg.pc === 'publish' ? s.publish : s.subscribe;
        link?.addRemoteCandidate(msg.candidate);
        return;
      }
      case 'participant-joined':
      case 'participant-updated':
        return this.upsertParticipant(msg.participant);
      case 'participant-left':
        return this.removeParticipant(msg.id);
      case 'participants':
        for (const p of msg.participants) this.upsertParticipant(p);
        for (const id of msg.left) this.removeParticipant(id);
        return this.setCount(msg.count);
      case 'participant-page': {
        const { type: _, ...page } = msg;
        this.setCount(msg.count);
        this.emitter.emit('participant-page', page);
        return;
      }
      case 'pong':
        if (msg.ts > 0 && msg.ts <= this.clock.now()) this.lastRtt = this.clock.now() - msg.ts;
        return this.armWatchdog(s);
      case 'error':
        return this.onError(s, msg);
      case 'bye':
        return this.terminate('bye', msg.reason || 'the server ended the session');
      case 'speaker':
        return this.forwarding.setSpeaker(msg.id === '' ? null : msg.id);
      case 'audio-slots':
        return this.media.setSlots(msg.ids);
      case 'forwarded':
        return this.forwarding.setForwarded(msg.ids, msg.lastN);
      case 'pause-video':
        return this.setPaused(s, true);
      case 'resume-video':
        return this.setPaused(s, false);
      case 'room':
        return this.forwarding.setRoom(msg.lastN, msg.onStage);
      case 'layers':
        return this.setLayers(s, new Set(msg.active));
      case 'suspended':
        return this.forwarding.setSuspended(msg.ids);
      case 'chat': {
        const { type: _, ...message } = msg;
        if (this.chatLog.add(message)) this.emitter.emit('chat', { message });
        return;
      }
      case 'chat-history':
        this.chatLog.replace(msg.messages);
        this.emitter.emit('chat-history', { messages: this.chatLog.messages });
        return;
      case 'stats': {
        const { type: _, ...stats } = msg;
        return this.forwarding.setBandwidth(stats);
      }
      case 'p2p':
        if (msg.on && this.opts.createDirectConnection === null) {
          s.send({ type: 'p2p-state', epoch: msg.epoch, state: 'closed' });
          return;
        }
        return this.direct.onMode(msg);
      case 'p2p-offer':
      case 'p2p-answer':
      case 'p2p-candidate':
        return this.direct.onSignal(msg);
    }
  }

  private onWelcome(s: Session, msg: WelcomeMessage): void {
    if (s.welcomed) return this.log.warn('ignored second welcome');
    s.welcomed = true;
    const resumed = this.everWelcomed;
    const attempts = this.attempt;
    this.everWelcomed = true;
    this.attempt = 0;
    this.redirects = 0;
    this.redirectUrl = this.sessionUrl;
    this.fallbacks = parseFallbacks(msg.fallbacks);
    this.ownId = msg.id;
    this.opts.e2ee?.setSelf(msg.id);
    this.resume = msg.resume;
    // Without the publish permission (a token without it, or an audience join)
    // the server has no publish connection for us: we make none either.
    const publishes = msg.permissions?.publish ?? true;
    this.emitter.emit('welcome', { id: msg.id, room: msg.room, resumed, publish: publishes });
    this.reconcile(msg.participants);
    this.setCount(msg.participantCount ?? msg.participants.length + 1);
    this.setState('connected');

    // A new session sends video, every encoding, until the server says otherwise.
    if (this.sendLayers.setPaused(false)) this.emitter.emit('video-paused', { paused: false });
    if (this.sendLayers.setActive(null)) this.emitter.emit('layers', { active: null });
    this.videoWants.newSession();
    this.forwarding.newSession();

    const config: PeerConnectionConfig = { ...this.opts.e2ee?.peerConfig, iceServers: msg.iceServers };
    // The direct connection needs no encoded-frame API: it is end to end by itself.
    this.direct.newSession({ iceServers: msg.iceServers });
    if (publishes) s.publish = this.createLink(s, 'publish', config);
    s.subscribe = this.createLink(s, 'subscribe', config);
    if (s.publish) {
      this.applyLocalEnabled();
      publishLocal(s, s.publish.pc, this.localStream, this.opts, this.log);
      if (this.screenStream) s.screen = publishScreen(s.publish.pc, this.screenStream, this.opts, this.log);
      s.offerPublish();
    }
    // A resumed session may carry a stale mute state; always restate ours then.
    if (resumed || this.local.audioMuted || this.local.videoMuted) {
      s.send({ type: 'mute', audio: this.local.audioMuted, video: this.local.videoMuted });
    }
    if (this.local.handRaised) s.send({ type: 'raise-hand', raised: true });
    // Our receive preferences are ours, not the session's: restate them.
    this.pins.restate((m) => s.send(m));
    this.sendConstraints(s, this.videoWants.unsent());
    if (resumed) this.emitter.emit('reconnected', { id: msg.id, attempts });
  }

  private onError(s: Session, msg: ErrorMessage): void {
    this.emitter.emit('error', {
      code: msg.code,
      message: msg.message,
      fatal: msg.fatal,
      source: 'server',
    });
    if (!msg.fatal && s.screen && s.publishOffering && SHARE_REFUSALS.has(msg.code)) return this.shareRefused(s);
    if (!msg.fatal) return;
    // Server-side failures, a missed negotiation and a dead peer connection
    // (transport-failed) are transient: start over, resuming our id.
    if (msg.code === 'internal' || msg.code === 'negotiation-timeout' || msg.code === 'transport-failed') {
      this.lost(s, `server error: ${msg.message || msg.code}`);
    } else this.terminate('error', `${msg.code}: ${msg.message}`);
  }

  /**
   * The server refused the offer that carries our share (too many tracks, its
   * sections, or no publish permission): the share ends, the offer is taken
   * back, and the session goes on as before it.
   */
  private shareRefused(s: Session): void {
    this.stopScreenShare();
    s.retractOffer();
  }

  /**
   * Forgets a source that is gone: a participant who left, or a screen share
   * that ended. Drops its pin, constraints and tracks; for a participant also
   * asks the server to unpin it (it forgets a share's pin by itself) and
   * clears it as dominant speaker.
   */
  private forgetSource(id: string, source: 'participant' | 'screen'): void {
    // A pin of a source that is gone would hold one of our N slots for nobody.
    if (this.pins.drop(id)) {
      const s = this.session;
      if (source === 'participant' && s?.welcomed && !this.terminal) s.send({ type: 'unpin', id });
      this.emitter.emit('pinned', { ids: this.pinned });
    }
    if (source === 'participant' && this.forwarding.speaker === id) this.forwarding.setSpeaker(null);
    this.videoWants.forget(id);
    this.media.dropAll(id);
  }

  // ---- participants --------------------------------------------------------

  /** After a `welcome`: the list is authoritative. Known ids keep their identity. */
  private reconcile(list: Participant[]): void {
    const present = new Set<string>();
    for (const p of list) {
      if (p.id === this.ownId) continue;
      present.add(p.id);
      this.upsertParticipant(p);
    }
    for (const id of [...this.people.all.keys()]) {
      if (!present.has(id)) this.removeParticipant(id);
    }
  }

  private setCount(count: number): void {
    if (count === this.count) return;
    this.count = count;
    this.emitter.emit('participant-count', { count });
  }

  private upsertParticipant(p: Participant): void {
    if (p.id === this.ownId) return;
    const previous = this.people.set(p);
    if (!previous || previous.e2ee !== p.e2ee || previous.screen !== p.screen) {
      this.media.rebind((source) => source === p.id || source === p.screen);
    }
    if (previous?.screen && previous.screen !== p.screen) this.forgetSource(previous.screen, 'screen');
    this.people.announce(p.id, previous);
  }

  private removeParticipant(id: string): void {
    const p = this.people.delete(id);
    if (!p) return;
    if (p.screen) this.forgetSource(p.screen, 'screen');
    this.forgetSource(id, 'participant');
    this.opts.e2ee?.rotate(); // who left keeps no key to our next frames
    this.emitter.emit('participant-left', { id, participant: { ...p } });
  }

  // ---- hybrid P2P ------------------------------------------------------------

  private createDirect(): Direct {
    return new Direct({
      send: (m) => {
        const s = this.session;
        if (s?.welcomed && !this.terminal) s.send(m);
      },
      createPeerConnection: (config) =>
        (this.opts.createDirectConnection ?? ((c: PeerConnectionConfig) => new RTCPeerConnection(c)))(config),
      localStream: () => this.localStream,
      render: (via, peer) => this.renderPeer(via, peer),
      sfuProgress: (peer) => this.sfuProgress(peer),
      // setCodecPreferences takes the receiver's capabilities.
      codecs: (kind) => {
        const R = (globalThis as { RTCRtpReceiver?: typeof RTCRtpReceiver }).RTCRtpReceiver;
        return R && typeof R.getCapabilities === 'function' ? (R.getCapabilities(kind)?.codecs ?? null) : null;
      },
      changed: (state) => this.emitter.emit('p2p', state),
      clock: this.clock,
      log: this.log,
    });
  }

  /** Shows a participant's media from the direct connection or from the SFU. */
  private renderPeer(via: 'p2p' | 'sfu', peer: string): void {
    const direct = this.direct.tracks;
    const sfu = this.media.get(peer);
    const [shown, hidden] = via === 'p2p' ? [direct, sfu] : [sfu, direct];
    for (const kind of ['video', 'audio'] as const) {
      const t = shown[kind];
      const h = hidden[kind];
      if (t) this.emitter.emit('track-added', { participantId: peer, kind, track: t.track, stream: t.stream });
      else if (h) this.emitter.emit('track-removed', { participantId: peer, kind, track: h.track });
    }
  }

  /** The SFU's inbound counters of a participant's video (else audio). */
  private async sfuProgress(peer: string): Promise<{ progress: Progress | null; hasVideo: boolean }> {
    const sub = this.session?.subscribe?.pc;
    const report = sub ? await this.boundedStats(sub) : null;
    if (!report) return { progress: null, hasVideo: false };
    const rows = inboundStats(report, (t, mid) => this.media.resolveStats(t, mid)).filter((r) => r.participantId === peer);
    const video = rows.find((r) => r.kind === 'video');
    const row = video ?? rows.find((r) => r.kind === 'audio');
    return { progress: row ? { framesDecoded: row.framesDecoded, packetsReceived: row.packetsReceived } : null, hasVideo: !!video };
  }

  // ---- peer connections ----------------------------------------------------

  private createLink(s: Session, name: PcName, config: PeerConnectionConfig): PeerLink {
    const pc = (this.opts.createPeerConnection ?? browserPeerConnection)(config);
    const link = new PeerLink(name, pc, {
      send: (m) => {
        if (s === this.session) s.send(m);
      },
      fail: (reason, err) => {
        if (s !== this.session) return;
        this.log.warn(reason, err);
        this.emitter.emit('error', {
          code: 'negotiation-failed',
          message: `${reason}: ${String(err)}`,
          fatal: false,
          source: 'client',
        });
        this.lost(s, reason);
      },
      warn: (...args) => this.log.warn(...args),
    });
    pc.onconnectionstatechange = () => this.onPeerState(s, link);
    if (name === 'subscribe') {
      pc.ontrack = (ev) => {
        if (s === this.session) this.media.add(ev, () => s === this.session);
      };
    }
    return link;
  }

  private onPeerState(s: Session, link: PeerLink): void {
    if (s !== this.session) return;
    const state = link.pc.connectionState;
    this.emitter.emit('peer-state', { pc: link.name, state });
    s.peerState(link, state, this.opts.disconnectedTimeoutMs ?? 4000, (reason) => this.lost(s, reason));
  }

  /**
   * Tells end-to-end encryption whose media a receiver carries. A source whose
   * participant is not known yet counts as encrypting (its frames are dropped,
   * not shown undecrypted) until it is (upsertParticipant binds again).
   */
  private bindReceiver(receiver: unknown, ref: TrackRef): void {
    const owner = this.people.ownerOf(ref.participantId);
    this.opts.e2ee?.receiver(receiver, ref.kind, owner?.id ?? ref.participantId, owner ? owner.e2ee === true : true);
  }

  // ---- speaker and video pausing -------------------------------------------

  private setPaused(s: Session, paused: boolean): void {
    if (this.sendLayers.setPaused(paused)) this.emitter.emit('video-paused', { paused });
    this.applySendActive(s);
  }

  private setLayers(s: Session, active: Set<string>): void {
    if (this.sendLayers.setActive(active)) this.emitter.emit('layers', { active: [...active] });
    this.applySendActive(s);
  }

  /** Restates which encodings the video sender sends (SendLayers.apply). */
  private applySendActive(s: Session): void {
    const sender = s.videoSender;
    if (!sender) return;
    this.sendLayers.apply(
      sender,
      () => s === this.session && s.videoSender === sender,
      () => s === this.session,
    );
  }

  // ---- constraints ---------------------------------------------------------

  /** Sends the collected constraint changes after constraintsDelayMs (one pending send at a time). */
  private scheduleConstraints(s: Session): void {
    if (s.constraintsTimer !== null) return;
    const delay = this.opts.constraintsDelayMs ?? 200;
    if (delay <= 0) return this.flushConstraints(s);
    s.constraintsTimer = this.clock.setTimeout(() => {
      s.constraintsTimer = null;
      this.flushConstraints(s);
    }, delay);
  }

  private flushConstraints(s: Session): void {
    if (s !== this.session || !s.welcomed || this.terminal) return;
    this.sendConstraints(s, this.videoWants.unsent());
  }

  private sendConstraints(s: Session, entries: [string, VideoConstraint][]): void {
    if (entries.length === 0) return;
    s.send({ type: 'constraints', videos: this.videoWants.markSent(entries) });
  }

  private applyLocalEnabled(): void {
    const stream = this.localStream;
    if (!stream) return;
    for (const t of stream.getAudioTracks()) t.enabled = !this.local.audioMuted;
    for (const t of stream.getVideoTracks()) t.enabled = !this.local.videoMuted;
  }

}
