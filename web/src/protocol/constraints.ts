// Our video constraints per remote source (setConstraints): what we want,
// and what the server was told in this session, so only changes are sent.

import type { VideoConstraint } from './messages';

/** Remote video constraints by participant id (what `constraints` messages carry). */
export type VideoConstraints = Record<string, VideoConstraint>;

type Entry = [string, VideoConstraint];

export class Constraints {
  /** Ours per remote source, re-sent in full after every welcome. */
  private readonly wanted = new Map<string, VideoConstraint>();
  /** What the server was told in this session (the merge of our `constraints` messages). */
  private readonly sent = new Map<string, VideoConstraint>();

  /** Checks and rounds the given constraints; throws a TypeError on a bad one. */
  static normalize(videos: VideoConstraints | ReadonlyMap<string, VideoConstraint>): Entry[] {
    const entries = videos instanceof Map ? [...videos] : Object.entries(videos);
    return entries.map(([id, c]) => [id, normalizeConstraint(id, c)]);
  }

  /**
   * Merges normalized constraints into ours (`skip`: ids that are not remote
   * sources). `roleChanged`: a source moved to or from the stage.
   */
  merge(next: Entry[], skip: (id: string) => boolean): { changed: boolean; roleChanged: boolean } {
    let changed = false;
    let roleChanged = false;
    for (const [id, c] of next) {
      if (skip(id)) continue;
      const prev = this.wanted.get(id);
      if (prev && sameConstraint(prev, c)) continue;
      if (prev && prev.role !== c.role) roleChanged = true;
      this.wanted.set(id, c);
      changed = true;
    }
    return { changed, roleChanged };
  }

  /** Ours, as given (copies). */
  get wantedCopy(): VideoConstraints {
    return copy(this.wanted);
  }

  /** What the server has been told in this session (copies). */
  get sentCopy(): VideoConstraints {
    return copy(this.sent);
  }

  /** Ours whose last sent value differs (all of them in a new session). */
  unsent(): Entry[] {
    return [...this.wanted].filter(([id, c]) => {
      const sent = this.sent.get(id);
      return !sent || !sameConstraint(sent, c);
    });
  }

  /** Records entries as sent and returns the `videos` of their `constraints` message. */
  markSent(entries: Entry[]): VideoConstraints {
    const videos: VideoConstraints = {};
    for (const [id, c] of entries) {
      videos[id] = { ...c };
      this.sent.set(id, { ...c });
    }
    return videos;
  }

  /** A new session: the server knows none of ours. */
  newSession(): void {
    this.sent.clear();
  }

  /** A source is gone. */
  forget(id: string): void {
    this.wanted.delete(id);
    this.sent.delete(id);
  }
}

function copy(m: ReadonlyMap<string, VideoConstraint>): VideoConstraints {
  return Object.fromEntries([...m].map(([id, c]) => [id, { ...c }]));
}

function normalizeConstraint(id: string, c: VideoConstraint): VideoConstraint {
  const bad = (what: string) => new TypeError(`Conference.setConstraints: ${id}: ${what}`);
  if (typeof c !== 'object' || c === null) throw bad('not an object');
  const size = (v: unknown, k: string) => {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw bad(`${k} must be a number ≥ 0`);
    return Math.round(v);
  };
  const out: VideoConstraint = { width: size(c.width, 'width'), height: size(c.height, 'height') };
  if (c.role !== undefined) {
    if (c.role !== 'stage' && c.role !== 'thumbnail') throw bad(`unknown role ${String(c.role)}`);
    out.role = c.role;
  }
  return out;
}

function sameConstraint(a: VideoConstraint, b: VideoConstraint): boolean {
  return a.width === b.width && a.height === b.height && a.role === b.role;
}
