// Direct: the hybrid P2P side of a Conference (docs/p2p.md). It runs the
// state machine of p2p.ts on what the server says (`p2p`, the relayed
// `p2p-offer` / `p2p-answer` / `p2p-candidate`) and what the connections
// show, owns the direct RTCPeerConnection of the current epoch, and tells the
// Conference which connection's media to show. The SFU connections are the
// Conference's and stay up throughout.

import type { Logger, RemoteTracks } from './api';
import type { Clock, PeerConnectionConfig, TimerHandle } from './env';
import type { ClientMessage, IceCandidateInit, P2PMessage, P2PSignalMessage } from './messages';
import {
  P2P_OFF,
  p2pAudioCodecs,
  p2pEncoding,
  p2pStep,
  p2pVideoCodecs,
  playing,
  withOpusFec,
  type P2PAction,
  type P2PInput,
  type P2PState,
  type Progress,
} from './p2p';
import type { MediaKind } from './stats';

/** How long a direct connection may take to play before it counts as failed. */
export const P2P_CONNECT_TIMEOUT_MS = 10_000;
/** How long we wait for the SFU's media when leaving before switching anyway. */
export const P2P_LEAVE_TIMEOUT_MS = 3_000;
/**
 * How long a direct connection stays open after its media stopped being shown:
 * the tile swaps to the SFU's track at that track's first frame (1 s at most),
 * and closing earlier would end the track still on screen (a black picture).
 */
export const P2P_LINGER_MS = 1_500;
/** How often the connections' stats are read while waiting for media. */
const POLL_MS = 100;

export interface DirectHooks {
  /** Sends on the current signaling session (dropped when there is none). */
  send(msg: ClientMessage): void;
  /** Makes the direct connection (the browser's RTCPeerConnection). */
  createPeerConnection(config: PeerConnectionConfig): RTCPeerConnection;
  /** Our camera and microphone. */
  localStream(): MediaStream | null;
  /** Show the peer's media from the direct connection, or again from the SFU. */
  render(via: 'p2p' | 'sfu', peer: string): void;
  /** The SFU's inbound counters of the peer's media, and whether it sends video. */
  sfuProgress(peer: string): Promise<{ progress: Progress | null; hasVideo: boolean }>;
  /** Codecs this browser receives (RTCRtpReceiver.getCapabilities), for setCodecPreferences. */
  codecs(kind: 'audio' | 'video'): RTCRtpCodec[] | null;
  /** The state changed (for the `p2p` event). */
  changed(state: P2PState): void;
  clock: Clock;
  log: Logger;
}

/** The direct connection of one epoch. */
class Call {
  readonly pc: RTCPeerConnection;
  readonly tracks: RemoteTracks = {};
  private remoteSet = false;
  private readonly pending: (IceCandidateInit | null)[] = [];
  private chain: Promise<void> = Promise.resolve();
  closed = false;

  constructor(
    readonly epoch: number,
    readonly peer: string,
    readonly initiator: boolean,
    config: PeerConnectionConfig,
    private readonly hooks: DirectHooks,
    private readonly fail: (why: string) => void,
  ) {
    this.pc = hooks.createPeerConnection(config);
    const stream = hooks.localStream();
    for (const t of stream?.getTracks() ?? []) this.pc.addTrack(t, stream as MediaStream);
    // Receive both kinds even without a camera or microphone of our own.
    for (const kind of ['audio', 'video'] as const) {
      if (!stream || (kind === 'audio' ? stream.getAudioTracks() : stream.getVideoTracks()).length === 0) {
        this.pc.addTransceiver(kind, { direction: 'recvonly' });
      }
    }
    this.pc.onicecandidate = (ev) => {
      if (this.closed) return;
      const c = ev.candidate ? (ev.candidate.toJSON() as IceCandidateInit) : null;
      hooks.send({ type: 'p2p-candidate', to: peer, epoch, candidate: c });
    };
    this.pc.ontrack = (ev) => {
      const kind: MediaKind = ev.track.kind === 'audio' ? 'audio' : 'video';
      this.tracks[kind] = { track: ev.track, stream: ev.streams[0] ?? null };
    };
    this.pc.onconnectionstatechange = () => {
      if (this.pc.connectionState === 'failed') this.fail('direct connection failed');
    };
  }

  /** Codec preferences and the one capped encoding, before an offer or answer. */
  private prepare(): void {
    for (const tr of this.pc.getTransceivers()) {
      const kind = tr.receiver.track.kind as 'audio' | 'video';
      const caps = this.hooks.codecs(kind);
      if (caps && typeof tr.setCodecPreferences === 'function') {
        try {
          tr.setCodecPreferences(kind === 'video' ? p2pVideoCodecs(caps) : p2pAudioCodecs(caps));
        } catch (err) {
          this.hooks.log.warn('p2p: codec preferences refused', err);
        }
      }
    }
  }

  /** Caps the video sender: one encoding, 720p, 2.5 Mb/s. */
  private async capVideo(): Promise<void> {
    for (const s of this.pc.getSenders()) {
      if (s.track?.kind !== 'video') continue;
      const height = s.track.getSettings().height ?? 0;
      const params = s.getParameters();
      if (!params.encodings || params.encodings.length === 0) continue;
      params.encodings[0] = { ...params.encodings[0], ...p2pEncoding(height) };
      try {
        await s.setParameters(params);
      } catch (err) {
        this.hooks.log.warn('p2p: encoding cap refused', err);
      }
    }
  }

  private step(what: string, f: () => Promise<void>): void {
    this.chain = this.chain.then(async () => {
      if (this.closed) return;
      try {
        await f();
      } catch (err) {
        if (!this.closed) {
          this.hooks.log.warn(`p2p: ${what}`, err);
          this.fail(`${what}: ${String(err)}`);
        }
      }
    });
  }

  offer(): void {
    this.step('offer', async () => {
      this.prepare();
      const offer = await this.pc.createOffer();
      const sdp = withOpusFec(offer.sdp ?? '');
      await this.pc.setLocalDescription({ type: 'offer', sdp });
      this.hooks.send({ type: 'p2p-offer', to: this.peer, epoch: this.epoch, sdp });
    });
  }

  onOffer(sdp: string): void {
    this.step('answer', async () => {
      await this.pc.setRemoteDescription({ type: 'offer', sdp });
      await this.remoteApplied();
      this.prepare();
      const answer = await this.pc.createAnswer();
      const local = withOpusFec(answer.sdp ?? '');
      await this.pc.setLocalDescription({ type: 'answer', sdp: local });
      this.hooks.send({ type: 'p2p-answer', to: this.peer, epoch: this.epoch, sdp: local });
      await this.capVideo();
    });
  }

  onAnswer(sdp: string): void {
    this.step('apply answer', async () => {
      await this.pc.setRemoteDescription({ type: 'answer', sdp });
      await this.remoteApplied();
      await this.capVideo();
    });
  }

  onCandidate(c: IceCandidateInit | null): void {
    if (!this.remoteSet) {
      this.pending.push(c);
      return;
    }
    this.addCandidate(c);
  }

  private async remoteApplied(): Promise<void> {
    this.remoteSet = true;
    for (const c of this.pending.splice(0)) this.addCandidate(c);
  }

  private addCandidate(c: IceCandidateInit | null): void {
    this.pc.addIceCandidate(c ?? undefined).catch((err: unknown) => this.hooks.log.warn('p2p: candidate', err));
  }

  /** Inbound counters of the peer's video here, else of its audio (hasVideo false). */
  async progress(): Promise<{ progress: Progress | null; hasVideo: boolean }> {
    const report = await this.pc.getStats();
    let video: Progress | null = null;
    let audio: Progress | null = null;
    report.forEach((v: Record<string, unknown>) => {
      if (v['type'] !== 'inbound-rtp') return;
      const p = { framesDecoded: Number(v['framesDecoded'] ?? 0), packetsReceived: Number(v['packetsReceived'] ?? 0) };
      if (v['kind'] === 'video') video = p;
      else if (v['kind'] === 'audio') audio = p;
    });
    return { progress: video ?? audio, hasVideo: video !== null };
  }

  /** Replaces our track of that kind (a device switch). */
  replaceTrack(track: MediaStreamTrack): void {
    for (const s of this.pc.getSenders()) {
      if (s.track?.kind === track.kind) s.replaceTrack(track).catch(() => {});
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.pc.onicecandidate = null;
    this.pc.ontrack = null;
    this.pc.onconnectionstatechange = null;
    this.pc.close();
  }
}

export class Direct {
  private state: P2PState = { ...P2P_OFF };
  private call: Call | null = null;
  private config: PeerConnectionConfig = { iceServers: [] };
  private timer: TimerHandle | null = null;
  private deadline: TimerHandle | null = null;
  /** The SFU's counters of the peer when leaving began. */
  private sfuBaseline: Progress | null = null;
  private rendered: string | null = null;
  /** The last action batch switched the picture back to the SFU: close the direct connection later. */
  private linger = false;

  constructor(private readonly hooks: DirectHooks) {}

  get current(): P2PState {
    return { ...this.state };
  }

  /** The peer whose media is shown from the direct connection; null when none. */
  get renderedPeer(): string | null {
    return this.rendered;
  }

  /** The direct connection (for stats and tests); null when none. */
  get peerConnection(): RTCPeerConnection | null {
    return this.call?.pc ?? null;
  }

  /** The direct connection's remote tracks. */
  get tracks(): RemoteTracks {
    return { ...this.call?.tracks };
  }

  /** A new signaling session: its ICE servers are the direct connection's too. */
  newSession(config: PeerConnectionConfig): void {
    this.config = config;
  }

  sessionLost(): void {
    this.input({ type: 'session-lost' });
  }

  onMode(msg: P2PMessage): void {
    if (msg.on) this.input({ type: 'mode-on', epoch: msg.epoch, peer: msg.peer ?? '', initiator: msg.initiator === true });
    else this.input({ type: 'mode-off', epoch: msg.epoch });
  }

  onSignal(msg: P2PSignalMessage): void {
    const c = this.call;
    if (!c || msg.epoch !== c.epoch || msg.from !== c.peer) return;
    switch (msg.type) {
      case 'p2p-offer':
        if (!c.initiator && msg.sdp) c.onOffer(msg.sdp);
        return;
      case 'p2p-answer':
        if (c.initiator && msg.sdp) c.onAnswer(msg.sdp);
        return;
      case 'p2p-candidate':
        c.onCandidate(msg.candidate ?? null);
        return;
    }
  }

  replaceTrack(track: MediaStreamTrack): void {
    this.call?.replaceTrack(track);
  }

  private input(input: P2PInput): void {
    const { state, actions } = p2pStep(this.state, input);
    this.linger = false;
    const changed = state.phase !== this.state.phase || state.epoch !== this.state.epoch;
    this.state = state;
    for (const a of actions) this.apply(a);
    if (changed) this.hooks.changed(this.current);
  }

  private apply(a: P2PAction): void {
    switch (a.type) {
      case 'open':
        return this.open(a.epoch, a.peer, a.initiator);
      case 'close': {
        this.stopTimers();
        const call = this.call;
        this.call = null;
        if (call && this.linger) this.hooks.clock.setTimeout(() => call.close(), P2P_LINGER_MS);
        else call?.close();
        return;
      }
      case 'report':
        this.hooks.send({ type: 'p2p-state', epoch: a.epoch, state: a.state });
        return;
      case 'render':
        this.rendered = a.via === 'p2p' ? a.peer : null;
        this.linger = a.via === 'sfu';
        this.hooks.render(a.via, a.peer);
        return;
      case 'await-sfu':
        return this.awaitSfu(a.peer);
    }
  }

  private open(epoch: number, peer: string, initiator: boolean): void {
    const call = new Call(epoch, peer, initiator, this.config, this.hooks, (why) => {
      if (this.call === call) {
        this.hooks.log.warn('p2p:', why);
        this.input({ type: 'failed' });
      }
    });
    this.call = call;
    if (initiator) call.offer();
    const clock = this.hooks.clock;
    this.deadline = clock.setTimeout(() => {
      this.deadline = null;
      if (this.call === call && this.state.phase === 'connecting') {
        this.hooks.log.warn('p2p: no direct media within', P2P_CONNECT_TIMEOUT_MS, 'ms');
        this.input({ type: 'failed' });
      }
    }, P2P_CONNECT_TIMEOUT_MS);
    const poll = (): void => {
      this.timer = clock.setTimeout(() => {
        this.timer = null;
        if (this.call !== call || this.state.phase !== 'connecting') return;
        if (call.pc.connectionState !== 'connected') return poll();
        void call.progress().then(({ progress, hasVideo }) => {
          if (this.call !== call || this.state.phase !== 'connecting') return;
          if (playing(null, progress, hasVideo)) this.input({ type: 'direct-media' });
          else poll();
        }, poll);
      }, POLL_MS);
    };
    poll();
  }

  /** Leaving: show the SFU's media once it plays (or after P2P_LEAVE_TIMEOUT_MS). */
  private awaitSfu(peer: string): void {
    this.stopTimers();
    const clock = this.hooks.clock;
    const epoch = this.state.epoch;
    const still = (): boolean => this.state.phase === 'leaving' && this.state.epoch === epoch;
    this.deadline = clock.setTimeout(() => {
      this.deadline = null;
      if (still()) this.input({ type: 'sfu-media' });
    }, P2P_LEAVE_TIMEOUT_MS);
    const poll = (): void => {
      this.timer = clock.setTimeout(() => {
        this.timer = null;
        if (!still()) return;
        void this.hooks.sfuProgress(peer).then(({ progress, hasVideo }) => {
          if (!still()) return;
          if (playing(this.sfuBaseline, progress, hasVideo)) this.input({ type: 'sfu-media' });
          else poll();
        }, poll);
      }, POLL_MS);
    };
    // What the SFU's receivers showed before it forwarded again: only frames
    // decoded after it count.
    void this.hooks.sfuProgress(peer).then(
      ({ progress }) => {
        this.sfuBaseline = progress;
        if (still()) poll();
      },
      () => still() && poll(),
    );
  }

  private stopTimers(): void {
    const clock = this.hooks.clock;
    if (this.timer !== null) clock.clearTimeout(this.timer);
    if (this.deadline !== null) clock.clearTimeout(this.deadline);
    this.timer = this.deadline = null;
  }
}
