// The remote tracks of the subscribe connection: which participant (or screen
// share) each track carries, the track-added / track-removed events, and the
// lookups getStats() needs. One session's tracks; reset() when it ends.
//
// Audio slots (docs/protocol.md, "Audio slots"): a client that announced
// `audioSlots` gets the selected speakers' microphones on a few fixed tracks
// (streams "audio-slot-<i>") whose source the server changes, and is told
// with `audio-slots` whom each carries. A slot's track is shown as the audio
// of the participant it carries now — track-removed from the former one,
// track-added to the new one — so the UI and getStats() stay per participant.

import type { ConferenceEvents, Logger, RemoteTracks } from './api';
import type { Emitter } from './emitter';
import type { TrackEventLike } from './env';
import { SlotStreamPrefix } from './generated/messages';
import { parseTrackId, type MediaKind, type TrackRef } from './stats';

/** Tells end-to-end encryption whose media a receiver carries. */
export type BindReceiver = (receiver: unknown, ref: TrackRef) => void;

export class RemoteMedia {
  private readonly remote = new Map<string, RemoteTracks>();
  /** Receiver track id → participant, for track removal and getStats(). */
  private readonly trackIndex = new Map<string, TrackRef>();
  /** Transceiver mid → participant, getStats() fallback without trackIdentifier. */
  private readonly midIndex = new Map<string, TrackRef>();
  private readonly watched = new WeakSet<object>();
  /** Receivers with an end-to-end encryption transform, and the source each carries now. */
  private readonly e2eeReceivers = new Map<unknown, TrackRef>();
  /** Audio slots by index, and whom each carries by the last `audio-slots`. */
  private readonly slots = new Map<number, Slot>();
  private slotOwners: readonly string[] = [];

  /** `bind` is null without end-to-end encryption. */
  constructor(
    private readonly emitter: Pick<Emitter<ConferenceEvents>, 'emit'>,
    private readonly log: Logger,
    private readonly bind: BindReceiver | null,
  ) {}

  /** Current remote tracks of a participant (a copy). */
  get(participantId: string): RemoteTracks {
    return { ...this.remote.get(participantId) };
  }

  /** A track arrived on the subscribe connection; `live` says whether its session is still ours. */
  add(ev: TrackEventLike, live: () => boolean): void {
    const track = ev.track;
    const stream = ev.streams[0] ?? null;
    const slot = slotIndex(stream?.id ?? track.id);
    if (slot !== null && track.kind === 'audio') return this.addSlot(slot, ev, live);
    const kind: MediaKind = track.kind === 'audio' ? 'audio' : 'video';
    const participantId = stream?.id ?? parseTrackId(track.id)?.participantId;
    if (!participantId) {
      this.log.warn('track without a participant', track.id);
      return;
    }
    const ref: TrackRef = { participantId, kind };
    // A receiver (and its track) can be reused for another source when the
    // SFU recycles a transceiver: detach it from its former owner first.
    const former = this.trackIndex.get(track.id);
    if (former && (former.participantId !== participantId || former.kind !== kind)) {
      this.trackGone(track);
    }
    this.trackIndex.set(track.id, ref);
    if (this.bind && ev.receiver) {
      this.e2eeReceivers.set(ev.receiver, ref);
      this.bind(ev.receiver, ref);
    }
    const mid = ev.transceiver?.mid;
    if (mid) this.midIndex.set(mid, ref);

    if (stream && !this.watched.has(stream)) {
      this.watched.add(stream);
      stream.addEventListener('removetrack', (e) => {
        if (live()) this.trackGone((e as MediaStreamTrackEvent).track);
      });
    }
    if (!this.watched.has(track)) {
      this.watched.add(track);
      track.addEventListener('ended', () => {
        if (live()) this.trackGone(track);
      });
    }

    this.attach(participantId, kind, track, stream);
  }

  /** Whom the audio slots carry now (`audio-slots`): slot i carries `ids[i]`, `""` nobody. */
  setSlots(ids: readonly string[]): void {
    this.slotOwners = [...ids];
    for (const i of this.slots.keys()) this.applySlot(i);
  }

  private addSlot(index: number, ev: TrackEventLike, live: () => boolean): void {
    const track = ev.track;
    const prev = this.slots.get(index);
    if (prev?.track === track) return;
    if (prev) this.detachSlot(prev);
    const slot: Slot = { track, stream: ev.streams[0] ?? null, mid: ev.transceiver?.mid ?? null, owner: null };
    this.slots.set(index, slot);
    if (!this.watched.has(track)) {
      this.watched.add(track);
      track.addEventListener('ended', () => {
        if (!live() || this.slots.get(index)?.track !== track) return;
        this.detachSlot(slot);
        this.slots.delete(index);
      });
    }
    this.applySlot(index);
  }

  /** Shows slot index's track as the audio of the participant it carries now. */
  private applySlot(index: number): void {
    const slot = this.slots.get(index);
    if (!slot) return;
    const owner = this.slotOwners[index] || null;
    if (slot.owner === owner) return;
    this.detachSlot(slot);
    if (owner === null) return;
    slot.owner = owner;
    const ref: TrackRef = { participantId: owner, kind: 'audio' };
    this.trackIndex.set(slot.track.id, ref);
    if (slot.mid) this.midIndex.set(slot.mid, ref);
    this.attach(owner, 'audio', slot.track, slot.stream);
  }

  private detachSlot(slot: Slot): void {
    if (slot.owner === null) return;
    this.trackGone(slot.track);
    this.trackIndex.delete(slot.track.id);
    if (slot.mid) this.midIndex.delete(slot.mid);
    slot.owner = null;
  }

  private attach(participantId: string, kind: MediaKind, track: MediaStreamTrack, stream: MediaStream | null): void {
    const entry = this.remote.get(participantId) ?? {};
    const prev = entry[kind];
    if (prev?.track === track) return;
    if (prev) this.drop(participantId, kind);
    const next = this.remote.get(participantId) ?? {};
    next[kind] = { track, stream };
    this.remote.set(participantId, next);
    this.emitter.emit('track-added', { participantId, kind, track, stream });
  }

  /** Binds again every receiver that carries one of these sources (their owner changed). */
  rebind(carries: (source: string) => boolean): void {
    if (!this.bind) return;
    for (const [receiver, ref] of this.e2eeReceivers) {
      if (carries(ref.participantId)) this.bind(receiver, ref);
    }
  }

  /** Removes both tracks of a source (it left or ended). */
  dropAll(participantId: string): void {
    const tracks = this.remote.get(participantId);
    if (tracks?.audio) this.drop(participantId, 'audio');
    if (tracks?.video) this.drop(participantId, 'video');
    this.remote.delete(participantId);
  }

  /** The session ended: its tracks died with the subscribe connection. */
  reset(): void {
    for (const [pid, tracks] of [...this.remote]) {
      for (const kind of ['audio', 'video'] as const) {
        if (tracks[kind]) this.drop(pid, kind);
      }
    }
    this.trackIndex.clear();
    this.e2eeReceivers.clear();
    this.midIndex.clear();
    this.slots.clear();
    this.slotOwners = [];
  }

  /** The source of an inbound stats entry, when its track is still in use. */
  resolveStats(trackIdentifier: string | undefined, mid: string | undefined): TrackRef | undefined {
    if (trackIdentifier !== undefined) {
      const ref = this.trackIndex.get(trackIdentifier);
      if (ref) {
        // Only tracks still in use: inactive receivers keep reporting old stats.
        const cur = this.remote.get(ref.participantId)?.[ref.kind];
        return cur?.track.id === trackIdentifier ? ref : undefined;
      }
      return undefined;
    }
    if (mid !== undefined) return this.midIndex.get(mid);
    return undefined;
  }

  private trackGone(track: MediaStreamTrack | undefined): void {
    if (!track) return;
    const ref = this.trackIndex.get(track.id);
    if (!ref) return;
    if (this.remote.get(ref.participantId)?.[ref.kind]?.track === track) {
      this.drop(ref.participantId, ref.kind);
    }
  }

  private drop(participantId: string, kind: MediaKind): void {
    const entry = this.remote.get(participantId);
    const t = entry?.[kind];
    if (!entry || !t) return;
    delete entry[kind];
    if (!entry.audio && !entry.video) this.remote.delete(participantId);
    this.emitter.emit('track-removed', { participantId, kind, track: t.track });
  }
}

/** An audio slot's track and whom it carries now (null: nobody). */
interface Slot {
  readonly track: MediaStreamTrack;
  readonly stream: MediaStream | null;
  readonly mid: string | null;
  owner: string | null;
}

/** The slot an id names ("audio-slot-<i>"), or null. */
export function slotIndex(id: string): number | null {
  if (!id.startsWith(SlotStreamPrefix)) return null;
  const n = Number(id.slice(SlotStreamPrefix.length));
  return Number.isInteger(n) && n >= 0 && n < 64 ? n : null;
}
