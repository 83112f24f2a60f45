// One signaling session of a Conference: its WebSocket, its two peer
// connections, what it publishes, and its timers (keepalive, a peer
// connection's grace while `disconnected`, collected constraints). A lost
// session is closed and a new one opened; the Conference outlives them.

import type { Logger } from './api';
import { WS_OPEN, type Clock, type SenderLike, type TimerHandle, type WebSocketLike } from './env';
import type { ClientMessage, PcName } from './messages';
import type { PeerLink } from './peer';
import { screenMids, type ScreenTransceivers } from './screen';

export class Session {
  publish: PeerLink | null = null;
  subscribe: PeerLink | null = null;
  welcomed = false;
  /** The sender of the published video, for pause-video / resume-video and `layers`. */
  videoSender: SenderLike | null = null;
  /** The sender of the published audio, for replaceLocalTrack. */
  audioSender: SenderLike | null = null;
  /** Pending send of collected constraint changes. */
  constraintsTimer: TimerHandle | null = null;
  /** The screen share's transceivers in this session's publish connection. */
  screen: ScreenTransceivers | null = null;
  /** A publish offer awaits its answer; `publishAgain`: offer again once it arrives. */
  publishOffering = false;
  publishAgain = false;

  private pingTimer: TimerHandle | null = null;
  private watchdogTimer: TimerHandle | null = null;
  private readonly disconnectTimers = new Map<PcName, TimerHandle>();

  constructor(
    readonly ws: WebSocketLike,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** Sends a message when the socket is open (dropped otherwise: the session is going). */
  send(msg: ClientMessage): void {
    if (this.ws.readyState !== WS_OPEN) return;
    try {
      this.ws.send(JSON.stringify(msg));
    } catch (err) {
      this.log.warn('send failed', err);
    }
  }

  /** Sends a `ping` every intervalMs while `live()`. */
  schedulePing(intervalMs: number, live: () => boolean): void {
    this.pingTimer = this.clock.setTimeout(() => {
      if (!live()) return;
      this.send({ type: 'ping', ts: this.clock.now() });
      this.schedulePing(intervalMs, live);
    }, intervalMs);
  }

  /** Calls `dead` when no `pong` re-arms this within timeoutMs. */
  armWatchdog(timeoutMs: number, dead: () => void): void {
    if (this.watchdogTimer !== null) this.clock.clearTimeout(this.watchdogTimer);
    this.watchdogTimer = this.clock.setTimeout(() => {
      this.watchdogTimer = null;
      dead();
    }, timeoutMs);
  }

  /**
   * A peer connection's state changed: `lost` when it failed, closed without
   * us, its DTLS transport ended, or it stayed `disconnected` for timeoutMs.
   */
  peerState(link: PeerLink, state: RTCPeerConnectionState, timeoutMs: number, lost: (reason: string) => void): void {
    const pending = this.disconnectTimers.get(link.name);
    if (state !== 'disconnected' && pending !== undefined) {
      this.clock.clearTimeout(pending);
      this.disconnectTimers.delete(link.name);
    }
    if (state === 'connected') {
      link.watchDtls((dtls) => lost(`${link.name} DTLS transport ${dtls}`));
    }
    // 'closed' that we did not cause (PeerLink.close detaches this handler first).
    if (state === 'failed' || state === 'closed') {
      lost(`${link.name} connection ${state}`);
    } else if (state === 'disconnected' && pending === undefined) {
      const timer = this.clock.setTimeout(() => {
        this.disconnectTimers.delete(link.name);
        if (link.pc.connectionState === 'disconnected') {
          lost(`${link.name} connection disconnected`);
        }
      }, timeoutMs);
      this.disconnectTimers.set(link.name, timer);
    }
  }

  /** Sends a publish offer, or a fresh one once the pending one is answered. */
  offerPublish(): void {
    if (!this.publish) return;
    if (this.publishOffering) {
      this.publishAgain = true;
      return;
    }
    this.publishOffering = true;
    void this.publish.offer(() => screenMids(this.screen));
  }

  /** The publish answer arrived: offer again if something changed meanwhile. */
  publishAnswered(): void {
    this.publishOffering = false;
    if (this.publishAgain) {
      this.publishAgain = false;
      this.offerPublish();
    }
  }

  /** The pending publish offer was refused: take it back, then offer what is published now. */
  retractOffer(): void {
    this.publishOffering = false;
    this.publishAgain = false;
    // A first offer taken back leaves nothing published: offer again.
    void this.publish?.rollback().then(() => this.offerPublish());
  }

  /** Stops the timers and closes the WebSocket and both peer connections. */
  close(): void {
    for (const t of [this.pingTimer, this.watchdogTimer, this.constraintsTimer, ...this.disconnectTimers.values()]) {
      if (t !== null) this.clock.clearTimeout(t);
    }
    this.pingTimer = null;
    this.watchdogTimer = null;
    this.constraintsTimer = null;
    this.disconnectTimers.clear();
    this.videoSender = null;
    const ws = this.ws;
    ws.onopen = null;
    ws.onmessage = null;
    ws.onclose = null;
    ws.onerror = null;
    try {
      ws.close(1000);
    } catch (err) {
      this.log.debug('ws close', err);
    }
    this.publish?.close();
    this.subscribe?.close();
  }
}
