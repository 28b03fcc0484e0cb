import { describe, expect, it } from 'vitest';
import { slotClaim, type SlotClaim, type SlotCount } from '../../src/core/sending/caps.js';
import { acceptVerdict } from '../../src/core/billing/ledger.js';

/**
 * The per-line caps (core/sending/caps.ts) over a line's slots kept in memory the way
 * every store keeps them: a slot's time is its hold while in flight, its send
 * time once sent, and it is gone when the send failed before going out.
 */
class Slots {
  private readonly at = new Map<string, number>();

  counts(windows: number[], now: number): SlotCount[] {
    return windows.map((ms) => {
      const live = [...this.at.values()].filter((t) => t > now - ms);
      const past = live.filter((t) => t <= now);
      return { n: live.length, oldest: past.length ? Math.min(...past) : null };
    });
  }

  /** Takes a slot for `id` unless the claim refuses; what a store does in one transaction. */
  take(id: string, claim: SlotClaim, now: number) {
    const hit = claim.windows.length ? claim.decide(this.counts(claim.windows, now)) : null;
    if (!hit) this.at.set(id, claim.holdUntil);
    return hit;
  }

  sent(id: string, t: number): void {
    this.at.set(id, t);
  }

  failedUnsent(id: string): void {
    this.at.delete(id);
  }
}

const T0 = Date.UTC(2026, 3, 1, 12);
const HOLD = 60_000;
const MIN = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
/** A line's caps: per minute and per hour always set (a large hour unless given), per day optional. */
const caps = (minuto: number, hora = 1_000_000, dia: number | null = null) => ({
  max_envios_por_minuto: minuto,
  max_envios_por_hora: hora,
  max_envios_por_dia: dia,
});

/** Sends `n` messages at `t` (each taken and sent at once); fails if one is refused. */
function sendAt(s: Slots, c: ReturnType<typeof caps>, t: number, n = 1, prefix = `m${t}`): void {
  for (let i = 0; i < n; i++) {
    const id = `${prefix}-${i}`;
    expect(s.take(id, slotClaim(c, t, HOLD), t), `${id} at ${t}`).toBeNull();
    s.sent(id, t);
  }
}

describe('caps: which windows bind', () => {
  it('the minute and the hour are always counted, the day only when the line has a daily cap', () => {
    expect(slotClaim(caps(5, 100, 1000), T0, HOLD).windows).toEqual([MIN, HOUR, DAY]);
    expect(slotClaim(caps(5, 100), T0, HOLD).windows).toEqual([MIN, HOUR]);
    expect(slotClaim(caps(5), T0, HOLD).holdUntil).toBe(T0 + HOLD);
  });

  it('a cap of 0 refuses every send', () => {
    const hit = slotClaim(caps(0), T0, HOLD).decide([
      { n: 0, oldest: null },
      { n: 0, oldest: null },
    ]);
    expect(hit).toMatchObject({ which: 'per minute', cap: 0 });
  });

  it("room is each window's most slots that decide still passes: one more in any window refuses (a store's guard, D-84)", () => {
    const claim = slotClaim(caps(5, 100, 1000), T0, HOLD);
    expect(claim.room).toEqual([4, 99, 999]);
    const at = (n: number[]) => claim.decide(n.map((k) => ({ n: k, oldest: T0 - 1 })));
    expect(at(claim.room)).toBeNull();
    for (const i of claim.room.keys()) expect(at(claim.room.map((r, j) => (j === i ? r + 1 : r)))).not.toBeNull();
    expect(slotClaim(caps(0), T0, HOLD).room).toEqual([-1, 999_999]);
  });
});

describe('caps: sliding windows', () => {
  it('per minute: the cap-th send fills it; the next waits until the oldest send leaves the window', () => {
    const s = new Slots();
    const c = caps(2);
    sendAt(s, c, T0);
    sendAt(s, c, T0 + 10_000);
    const hit = s.take('x', slotClaim(c, T0 + 20_000, HOLD), T0 + 20_000);
    expect(hit).toEqual({ retryAfterMs: 40_000, which: 'per minute', cap: 2 });
    // One millisecond short of the oldest leaving: still full; at it: free.
    expect(s.take('x', slotClaim(c, T0 + MIN - 1, HOLD), T0 + MIN - 1)).toMatchObject({ retryAfterMs: 1 });
    expect(s.take('x', slotClaim(c, T0 + MIN, HOLD), T0 + MIN)).toBeNull();
  });

  it('per hour and per day: the window that frees last decides the wait', () => {
    const s = new Slots();
    const c = caps(10, 3, 4);
    sendAt(s, c, T0, 3);
    // The minute has room; the hour is full until T0 + 1 h.
    expect(s.take('x', slotClaim(c, T0 + 5 * MIN, HOLD), T0 + 5 * MIN)).toEqual({ retryAfterMs: HOUR - 5 * MIN, which: 'per hour', cap: 3 });
    sendAt(s, c, T0 + HOUR);
    // The hour has room again (one send in it); the day holds four, full until T0 + 1 day.
    const t = T0 + HOUR + MIN;
    expect(s.take('y', slotClaim(c, t, HOLD), t)).toEqual({ retryAfterMs: DAY - HOUR - MIN, which: 'per day', cap: 4 });
    expect(s.take('y', slotClaim(c, T0 + DAY, HOLD), T0 + DAY)).toBeNull();
  });

  it('when two windows are full, the longer wait is the answer', () => {
    const claim = slotClaim(caps(1, 2), T0 + 30_000, HOLD);
    const hit = claim.decide([
      { n: 1, oldest: T0 + 20_000 }, // the minute frees at T0 + 80 s
      { n: 2, oldest: T0 }, // the hour at T0 + 1 h
    ]);
    expect(hit).toEqual({ retryAfterMs: HOUR - 30_000, which: 'per hour', cap: 2 });
  });

  it('a send in flight holds a slot in every window; once sent it counts from its send time', () => {
    const s = new Slots();
    const c = caps(1, 2);
    expect(s.take('a', slotClaim(c, T0, HOLD), T0)).toBeNull();
    // In flight (held until T0 + 60 s): nothing sent yet to wait out, so look again in a second.
    expect(s.take('b', slotClaim(c, T0 + 5_000, HOLD), T0 + 5_000)).toEqual({ retryAfterMs: 1000, which: 'per minute', cap: 1 });
    s.sent('a', T0 + 5_000);
    expect(s.take('b', slotClaim(c, T0 + 6_000, HOLD), T0 + 6_000)).toEqual({ retryAfterMs: MIN - 1_000, which: 'per minute', cap: 1 });
    // Sent at T0 + 5 s: the minute is free from T0 + 65 s, not from its claim at T0 + 60 s.
    expect(s.take('b', slotClaim(c, T0 + 64_999, HOLD), T0 + 64_999)).not.toBeNull();
    expect(s.take('b', slotClaim(c, T0 + 65_000, HOLD), T0 + 65_000)).toBeNull();
  });

  it('a send that failed before going out gives its slot back', () => {
    const s = new Slots();
    const c = caps(1);
    expect(s.take('a', slotClaim(c, T0, HOLD), T0)).toBeNull();
    expect(s.take('b', slotClaim(c, T0, HOLD), T0)).not.toBeNull();
    s.failedUnsent('a');
    expect(s.take('b', slotClaim(c, T0, HOLD), T0)).toBeNull();
  });

  it('a wait is never 0: a window freeing this very millisecond still says 1 ms', () => {
    const hit = slotClaim(caps(1), T0 + MIN, HOLD).decide([
      { n: 1, oldest: T0 },
      { n: 1, oldest: T0 },
    ]);
    expect(hit?.retryAfterMs).toBe(1);
  });
});

describe('caps: direct and queued sends', () => {
  const state = { saldoCelular: 0, saldoGlobal: 5, pendientes: 0 };

  it('a direct send takes its slot at acceptance: a full window refuses it first, with the wait, before the balance', () => {
    const s = new Slots();
    const c = caps(1);
    sendAt(s, c, T0);
    const claim = slotClaim(c, T0 + 15_000, HOLD);
    const capHit = claim.decide(s.counts(claim.windows, T0 + 15_000));
    expect(acceptVerdict({ ...state, saldoGlobal: 0, capHit }, { charge: true, queued: false, maxPending: null })).toEqual({
      ok: false,
      reason: 'cap',
      retryAfterMs: 45_000,
      which: 'per minute',
      cap: 1,
    });
  });

  it('a queued send is accepted whatever the caps (no slot is asked), and takes its slot when the worker claims it', () => {
    const s = new Slots();
    const c = caps(1);
    sendAt(s, c, T0);
    expect(acceptVerdict({ ...state, capHit: null }, { charge: true, queued: true, maxPending: 10 })).toEqual({ ok: true, cargo: 'global' });
    // The worker's claim: refused with the same wait a direct send gets, then taken once the minute has passed.
    expect(s.take('q', slotClaim(c, T0 + 15_000, HOLD), T0 + 15_000)).toMatchObject({ retryAfterMs: 45_000 });
    expect(s.take('q', slotClaim(c, T0 + MIN, HOLD), T0 + MIN)).toBeNull();
  });

  it('direct and queued sends share the windows: whichever takes the last slot, the other waits', () => {
    const s = new Slots();
    const c = caps(2);
    sendAt(s, c, T0, 1, 'direct');
    expect(s.take('queued', slotClaim(c, T0 + 1_000, HOLD), T0 + 1_000)).toBeNull();
    // The queued one is in flight: a direct send now finds the minute full of one sent and one in flight.
    expect(s.take('direct2', slotClaim(c, T0 + 2_000, HOLD), T0 + 2_000)).toEqual({ retryAfterMs: 58_000, which: 'per minute', cap: 2 });
  });
});
