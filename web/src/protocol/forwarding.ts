// What the SFU tells us about what we receive: the dominant speaker, the
// videos it forwards to us (Last N), the room's settings, the videos it
// suspended for lack of bandwidth and its bandwidth figures. Each change is
// emitted as its Conference event.

import type { ConferenceEvents, RoomSettings } from './api';
import type { Emitter } from './emitter';
import type { BandwidthStats } from './messages';

export class Forwarding {
  private speakerId: string | null = null;
  private forwardedIds: string[] | null = null;
  private forwardedN: number | null = null;
  private roomState: RoomSettings | null = null;
  /** Forwarded videos suspended for lack of bandwidth (last `suspended` of this session). */
  private suspendedIds: string[] = [];
  /** The last `stats` of this session; null before the first. */
  private bandwidthStats: BandwidthStats | null = null;

  constructor(private readonly emitter: Emitter<ConferenceEvents>) {}

  get speaker(): string | null {
    return this.speakerId;
  }

  setSpeaker(id: string | null): void {
    if (this.speakerId === id) return;
    this.speakerId = id;
    this.emitter.emit('speaker', { id });
  }

  get forwarded(): string[] | null {
    return this.forwardedIds ? [...this.forwardedIds] : null;
  }

  get lastN(): number | null {
    return this.forwardedN;
  }

  isForwarded(participantId: string): boolean {
    return this.forwardedIds === null || this.forwardedIds.includes(participantId);
  }

  setForwarded(ids: string[], lastN: number): void {
    this.forwardedIds = [...ids];
    this.forwardedN = lastN;
    this.emitter.emit('forwarded', { ids: [...ids], lastN });
  }

  get room(): RoomSettings | null {
    return this.roomState ? { lastN: this.roomState.lastN, onStage: [...this.roomState.onStage] } : null;
  }

  setRoom(lastN: number, onStage: string[]): void {
    this.roomState = { lastN, onStage: [...onStage] };
    this.emitter.emit('room', this.room as RoomSettings);
  }

  get suspended(): string[] {
    return [...this.suspendedIds];
  }

  isSuspended(participantId: string): boolean {
    return this.suspendedIds.includes(participantId);
  }

  setSuspended(ids: string[]): void {
    const prev = new Set(this.suspendedIds);
    const same = prev.size === ids.length && ids.every((id) => prev.has(id));
    this.suspendedIds = [...ids];
    if (!same) this.emitter.emit('suspended', { ids: [...ids] });
  }

  get bandwidth(): BandwidthStats | null {
    return this.bandwidthStats ? copyBandwidth(this.bandwidthStats) : null;
  }

  setBandwidth(stats: BandwidthStats): void {
    this.bandwidthStats = stats;
    this.emitter.emit('bandwidth', { stats: copyBandwidth(stats) });
  }

  /** A new session: the SFU's bandwidth state belongs to the session it was measured in. */
  newSession(): void {
    this.setSuspended([]);
    if (this.bandwidthStats !== null) {
      this.bandwidthStats = null;
      this.emitter.emit('bandwidth', { stats: null });
    }
  }
}

function copyBandwidth(b: BandwidthStats): BandwidthStats {
  return {
    estimate: b.estimate,
    allocated: b.allocated,
    switches: b.switches,
    videos: Object.fromEntries(Object.entries(b.videos).map(([id, v]) => [id, { ...v }])),
  };
}
