// The other participants, by id, as the server described them; emits
// participant-joined / participant-updated when an entry is new or changed
// in something a page shows.

import type { ConferenceEvents } from './api';
import type { Emitter } from './emitter';
import type { Participant } from './messages';

export class Roster {
  private readonly people = new Map<string, Participant>();

  constructor(private readonly emitter: Emitter<ConferenceEvents>) {}

  get all(): ReadonlyMap<string, Participant> {
    return this.people;
  }

  /** Stores a copy of p; returns the entry it replaced. */
  set(p: Participant): Participant | undefined {
    const previous = this.people.get(p.id);
    this.people.set(p.id, { ...p });
    return previous;
  }

  /** Emits participant-joined (no previous) or participant-updated (a shown field changed). */
  announce(id: string, previous: Participant | undefined): void {
    const p = this.people.get(id);
    if (!p) return;
    if (!previous) {
      this.emitter.emit('participant-joined', { participant: { ...p } });
    } else if (
      previous.name !== p.name ||
      previous.audioMuted !== p.audioMuted ||
      previous.videoMuted !== p.videoMuted ||
      !!previous.handRaised !== !!p.handRaised ||
      previous.screen !== p.screen
    ) {
      this.emitter.emit('participant-updated', { participant: { ...p }, previous: { ...previous } });
    }
  }

  /** Removes an entry; returns it (undefined when unknown). */
  delete(id: string): Participant | undefined {
    const p = this.people.get(id);
    this.people.delete(id);
    return p;
  }

  /** The participant a source (participant id or its screen share's) belongs to. */
  ownerOf(source: string): Participant | undefined {
    return this.people.get(source) ?? [...this.people.values()].find((p) => p.screen === source);
  }
}
