/**
 * Body bytes in flight on requests not yet authenticated, per client address
 * and server-wide. An unauthenticated client may make the server buffer or
 * write only this much at once; the rest wait (429) or come back (503).
 */
export type Overrun = 'address' | 'server' | null;

export class UnauthBudget {
  private total = 0;
  private readonly byAddress = new Map<string, number>();

  constructor(
    readonly perAddress: number,
    readonly serverWide: number,
  ) {}

  /** Takes `n` bytes for `address`; nothing is taken when a bound would be passed. */
  take(address: string, n: number): Overrun {
    const held = this.byAddress.get(address) ?? 0;
    if (held + n > this.perAddress) return 'address';
    if (this.total + n > this.serverWide) return 'server';
    this.byAddress.set(address, held + n);
    this.total += n;
    return null;
  }

  give(address: string, n: number): void {
    if (n <= 0) return;
    const left = (this.byAddress.get(address) ?? 0) - n;
    if (left > 0) this.byAddress.set(address, left);
    else this.byAddress.delete(address);
    this.total -= n;
  }
}
