/**
 * A count of changes another thread makes (serve's background thread on
 * SQLite, server/background/changes.ts), as one cache sees it: `moved` says
 * whether it moved since this cache last asked. One load of a shared word.
 */
export class ChangeCount {
  private seen: number;

  constructor(private readonly read: () => number) {
    this.seen = read();
  }

  moved(): boolean {
    const n = this.read();
    if (n === this.seen) return false;
    this.seen = n;
    return true;
  }
}
