// PeerLink: one RTCPeerConnection to the SFU plus the signaling rules around
// it — serialized negotiation steps, remote candidates queued until the
// remote description is set, local candidates held back until our own
// offer/answer has been sent (so the server never sees a candidate first).

import type { IceCandidateLike, PeerConnectionLike } from './env';
import type { ClientMessage, IceCandidateInit, PcName } from './messages';

export interface PeerLinkHooks {
  send(msg: ClientMessage): void;
  /** A negotiation step failed; the link is unusable. */
  fail(reason: string, err: unknown): void;
  warn(...args: unknown[]): void;
}

/** RTCDtlsTransport, as RTCRtpSender.transport and RTCRtpReceiver.transport give it. */
interface DtlsTransportLike {
  readonly state: string;
  onstatechange: ((ev: unknown) => void) | null;
}

interface WithTransports {
  getSenders(): readonly { readonly transport?: DtlsTransportLike | null }[];
  getReceivers(): readonly { readonly transport?: DtlsTransportLike | null }[];
}

export class PeerLink {
  private chain: Promise<void> = Promise.resolve();
  private remoteSet = false;
  private readonly remoteQueue: (IceCandidateInit | null)[] = [];
  private localSent = false;
  private readonly localQueue: (IceCandidateInit | null)[] = [];
  private closed = false;
  private dtls: DtlsTransportLike | null = null;

  constructor(
    readonly name: PcName,
    readonly pc: PeerConnectionLike,
    private readonly hooks: PeerLinkHooks,
  ) {
    pc.onicecandidate = (ev) => this.localCandidate(ev.candidate);
  }

  /** Creates, applies and sends our offer (publish connection). */
  offer(screenMids?: () => string[]): Promise<void> {
    return this.enqueue('create offer', async () => {
      const offer = await this.pc.createOffer();
      if (this.closed) return;
      await this.pc.setLocalDescription(offer);
      if (this.closed) return;
      // The screen share's mids, known once the offer is applied.
      const mids = screenMids?.() ?? [];
      this.hooks.send({ type: 'offer', pc: this.name, sdp: offer.sdp ?? '', ...(mids.length > 0 ? { screenMids: mids } : {}) });
      this.localDescriptionSent();
    });
  }

  /** Takes back our offer when the server refused it (an error instead of an answer). */
  rollback(): Promise<void> {
    return this.enqueue('roll back offer', async () => {
      await this.pc.setLocalDescription({ type: 'rollback' });
    });
  }

  /** Applies the server's answer to our offer (publish connection). */
  applyAnswer(sdp: string): Promise<void> {
    return this.enqueue('apply answer', async () => {
      await this.pc.setRemoteDescription({ type: 'answer', sdp });
      if (this.closed) return;
      await this.remoteDescriptionSet();
    });
  }

  /** Applies a server offer and sends our answer (subscribe connection). */
  answerOffer(sdp: string): Promise<void> {
    return this.enqueue('answer offer', async () => {
      await this.pc.setRemoteDescription({ type: 'offer', sdp });
      if (this.closed) return;
      await this.remoteDescriptionSet();
      if (this.closed) return;
      const answer = await this.pc.createAnswer();
      if (this.closed) return;
      await this.pc.setLocalDescription(answer);
      if (this.closed) return;
      this.hooks.send({ type: 'answer', pc: this.name, sdp: answer.sdp ?? '' });
      this.localDescriptionSent();
    });
  }

  /** A trickled candidate from the server; `null` is end of candidates. */
  addRemoteCandidate(candidate: IceCandidateInit | null): void {
    if (this.closed) return;
    if (!this.remoteSet) {
      this.remoteQueue.push(candidate);
      return;
    }
    void this.enqueue('add candidate', () => this.addCandidate(candidate));
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.remoteQueue.length = 0;
    this.localQueue.length = 0;
    const pc = this.pc;
    pc.onicecandidate = null;
    pc.ontrack = null;
    pc.onconnectionstatechange = null;
    if (this.dtls) this.dtls.onstatechange = null;
    try {
      pc.close();
    } catch (err) {
      this.hooks.warn(`${this.name}: close`, err);
    }
  }

  /**
   * Calls dead once the connection's DTLS transport closes or fails (after the
   * SFU's close_notify, say). Browsers count a closed DTLS transport as
   * connected in connectionState, though no media flows over it any more.
   */
  watchDtls(dead: (state: string) => void): void {
    if (this.closed || this.dtls) return;
    const pc = this.pc as Partial<WithTransports>;
    const t =
      pc.getSenders?.().find((x) => x.transport)?.transport ??
      pc.getReceivers?.().find((x) => x.transport)?.transport;
    if (!t) return;
    this.dtls = t;
    t.onstatechange = () => {
      if (!this.closed && (t.state === 'closed' || t.state === 'failed')) dead(t.state);
    };
  }

  get isClosed(): boolean {
    return this.closed;
  }

  private enqueue(what: string, op: () => Promise<void>): Promise<void> {
    const run = async (): Promise<void> => {
      if (this.closed) return;
      try {
        await op();
      } catch (err) {
        if (this.closed) return;
        this.hooks.fail(`${this.name} connection: ${what} failed`, err);
      }
    };
    this.chain = this.chain.then(run);
    return this.chain;
  }

  private async remoteDescriptionSet(): Promise<void> {
    this.remoteSet = true;
    while (this.remoteQueue.length > 0 && !this.closed) {
      const c = this.remoteQueue.shift();
      if (c !== undefined) await this.addCandidate(c);
    }
  }

  private async addCandidate(candidate: IceCandidateInit | null): Promise<void> {
    try {
      if (candidate === null) await this.pc.addIceCandidate();
      else await this.pc.addIceCandidate(candidate);
    } catch (err) {
      // A single bad candidate is not fatal: ICE can succeed with the others.
      if (!this.closed) this.hooks.warn(`${this.name}: addIceCandidate`, err);
    }
  }

  private localCandidate(c: IceCandidateLike | null): void {
    if (this.closed) return;
    const init = c === null ? null : candidateInit(c);
    // Some browsers signal per-m-line end of candidates with an empty string;
    // only the final null is forwarded as end of candidates.
    if (init !== null && !init.candidate) return;
    if (!this.localSent) {
      this.localQueue.push(init);
      return;
    }
    this.hooks.send({ type: 'candidate', pc: this.name, candidate: init });
  }

  private localDescriptionSent(): void {
    if (this.localSent) return;
    this.localSent = true;
    for (const c of this.localQueue.splice(0)) {
      this.hooks.send({ type: 'candidate', pc: this.name, candidate: c });
    }
  }
}

function candidateInit(c: IceCandidateLike): IceCandidateInit {
  if (typeof c.toJSON === 'function') return c.toJSON();
  const init: IceCandidateInit = {
    candidate: c.candidate,
    sdpMid: c.sdpMid,
    sdpMLineIndex: c.sdpMLineIndex,
  };
  if (c.usernameFragment !== undefined) init.usernameFragment = c.usernameFragment;
  return init;
}
