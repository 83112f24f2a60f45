// Which of our video encodings are on: the server's `pause-video` /
// `resume-video` and `layers`, applied to the video sender's `active` flags
// without renegotiating (the camera and the local preview keep running).

import type { Logger } from './api';
import { wantedActive } from './encodings';
import type { SenderLike } from './env';

export class SendLayers {
  /** Whether the server asked us to stop sending video (this session only). */
  private paused = false;
  /** RIDs from the last `layers` of this session; null = all encodings. */
  private rids: Set<string> | null = null;
  /** Serializes getParameters/setParameters on the video sender. */
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly layerLimit: boolean | undefined,
    private readonly localStream: MediaStream | null,
    private readonly log: Logger,
  ) {}

  get isPaused(): boolean {
    return this.paused;
  }

  /** The RIDs wanted (a copy); null = all. */
  get active(): string[] | null {
    return this.rids ? [...this.rids] : null;
  }

  /** Returns whether the pause state changed. */
  setPaused(paused: boolean): boolean {
    if (this.paused === paused) return false;
    this.paused = paused;
    return true;
  }

  /** The RIDs of a `layers` message, or null (all) for a new session. Returns whether they changed. */
  setActive(active: Set<string> | null): boolean {
    const prev = this.rids;
    if (active === null) {
      this.rids = null;
      return prev !== null;
    }
    const same = prev !== null && prev.size === active.size && [...active].every((r) => prev.has(r));
    if (!same) this.rids = active;
    return !same;
  }

  /**
   * Sets the `active` flag of every encoding of the sender from the pause
   * state and the RIDs. Steps are serialized and read the wanted state when
   * they run, so the last word wins. `current`: the sender is still the
   * session's; `live`: the session is still ours (else failures are quiet).
   */
  apply(sender: SenderLike, current: () => boolean, live: () => boolean): void {
    this.chain = this.chain
      .then(async () => {
        if (!current()) return;
        // getParameters and setParameters in the same task, as browsers require.
        const params = sender.getParameters();
        const encodings = params.encodings ?? [];
        if (encodings.length === 0) return; // not negotiated yet: retried after the answer
        const wanted = wantedActive(encodings, this.paused, this.rids, this.layerLimit, this.localStream);
        if (encodings.every((e, i) => (e.active ?? true) === wanted[i])) return;
        encodings.forEach((e, i) => {
          e.active = wanted[i];
        });
        await sender.setParameters(params);
      })
      .catch((err: unknown) => {
        if (live()) this.log.warn('video sender setParameters failed', err);
      });
  }
}
