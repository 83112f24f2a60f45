// DecryptWatch decides when a remote source is shown as "cannot decrypt": when
// frames arrive and none decrypted for FAILING_MS (since it was bound, or since
// the last good frame); and back as soon as one decrypts. Its methods return a
// change to report, or null.

export const FAILING_MS = 1000;

export class DecryptWatch {
  private state: boolean | null = null;
  private lastGood: number;

  constructor(since: number) {
    this.lastGood = since;
  }

  opened(now: number): boolean | null {
    this.lastGood = now;
    if (this.state === true) return null;
    this.state = true;
    return true;
  }

  failed(now: number): boolean | null {
    if (this.state === false || now - this.lastGood < FAILING_MS) return null;
    this.state = false;
    return false;
  }
}
