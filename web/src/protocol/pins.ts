// Our pins and our Last N (docs/protocol.md): ours, not the session's, so
// they are restated after every welcome; unpins made while no session was up
// are sent then too.

import type { ClientMessage } from './messages';

export class Pins {
  /** Our pins, in order. */
  private readonly ids: string[] = [];
  /** Pins removed while no session was up; unpinned after the next welcome. */
  private readonly offlineUnpins = new Set<string>();
  /** Our set-last-n value; null until set. */
  private wantedLastN: number | null = null;

  /** Our pins, in order (a copy). */
  get list(): string[] {
    return [...this.ids];
  }

  get lastN(): number | null {
    return this.wantedLastN;
  }

  set lastN(n: number | null) {
    this.wantedLastN = n;
  }

  /** Appends a pin; false when it was there. */
  add(id: string): boolean {
    if (this.ids.includes(id)) return false;
    this.ids.push(id);
    this.offlineUnpins.delete(id);
    return true;
  }

  /** Removes a pin; false when there was none. `online`: the server is told now, else after the next welcome. */
  remove(id: string, online: boolean): boolean {
    if (!this.drop(id)) return false;
    if (!online) this.offlineUnpins.add(id);
    return true;
  }

  /** Removes the pin of a source that is gone; false when there was none. */
  drop(id: string): boolean {
    const i = this.ids.indexOf(id);
    if (i < 0) return false;
    this.ids.splice(i, 1);
    return true;
  }

  /** Restates Last N, the unpins made offline and the pins in a new session. */
  restate(send: (msg: ClientMessage) => void): void {
    if (this.wantedLastN !== null) send({ type: 'set-last-n', n: this.wantedLastN });
    for (const id of this.offlineUnpins) send({ type: 'unpin', id });
    this.offlineUnpins.clear();
    for (const id of this.ids) send({ type: 'pin', id });
  }
}
