import { effectiveCaps, type WarmupLine } from './warmup.js';

/**
 * Per-line send caps over sliding windows (minute, hour, day), exact across
 * direct and queued sends and across restarts. A send takes a slot before it
 * goes out (a direct send at its acceptance, a queued one with its claim), and
 * the store counts and takes the slot in one transaction, so no two sends can
 * pass a cap together. A slot in flight counts in every window; once sent it
 * counts from the moment it was sent, so no window ever holds more sends than
 * its cap.
 */

const WINDOWS = [
  { cap: 'max_envios_por_minuto', ms: 60_000, name: 'per minute' },
  { cap: 'max_envios_por_hora', ms: 3_600_000, name: 'per hour' },
  { cap: 'max_envios_por_dia', ms: 86_400_000, name: 'per day' },
] as const;

/** Clock skew between nodes a forgotten slot must outlast: a node whose clock lags counts a little further back. */
const SLOT_FORGET_MARGIN_MS = 3_600_000;

/** Slots that ended before this are counted by no window of any node, so a store may forget them. */
export function slotsForgottenBefore(now: number): number {
  return now - Math.max(...WINDOWS.map((w) => w.ms)) - SLOT_FORGET_MARGIN_MS;
}

/** How soon to look again when every send filling a window is still in flight (it ends or fails soon). */
const IN_FLIGHT_RETRY_MS = 1000;

/** Slots of one window: taken ones (in flight or sent), and the oldest send already made. */
export interface SlotCount {
  n: number;
  /** The earliest send time in the window that is not in the future (null: all in flight). */
  oldest: number | null;
}

export interface CapHit {
  retryAfterMs: number;
  which: string;
  cap: number;
}

/** What a store needs to take a send slot atomically: the windows to count, the rule, the slot's hold. */
export interface SlotClaim {
  /** Window lengths, ms, in the order `decide` expects their counts. */
  windows: number[];
  decide(counts: SlotCount[]): CapHit | null;
  /**
   * The most slots each window (in `windows`' order) may already hold for the
   * claim to pass: `decide` refuses exactly past these. A store that counts
   * under the line's lock can take the slot on them in the same statement and
   * ask `decide` only for a refusal's answer.
   */
  room: number[];
  /** A slot in flight is held until then (a crash mid-send leaves it counted as a send at that time). */
  holdUntil: number;
}

/**
 * The claim of one send slot of a line at `now`, held for `holdMs` while the
 * send is in flight: under its caps as its warm-up plan has them today, the
 * day in `tz` (core/sending/warmup.ts). A cap the plan lowered says so in its
 * refusal, and a retry is due no later than the plan's next day. Every
 * caller in src/ passes the server's zone (`core.config.tz`); a line without
 * a plan needs none (UTC then).
 */
export function slotClaim(celular: WarmupLine, now: number, holdMs: number, tz = 'UTC'): SlotClaim {
  const caps = effectiveCaps(celular, now, tz);
  const binding = WINDOWS.flatMap((w) => {
    const cap = caps[w.cap];
    if (cap === null) return [];
    const warm = caps.bajados.includes(w.cap) ? { warmName: `${w.name} (warm-up ${celular.calentamiento}, day ${caps.dia})`, until: caps.cambia_at } : null;
    return [{ cap, ms: w.ms, name: warm?.warmName ?? w.name, until: warm?.until ?? null }];
  });
  return {
    windows: binding.map((w) => w.ms),
    room: binding.map((w) => w.cap - 1),
    holdUntil: now + holdMs,
    decide(counts) {
      let worst: CapHit | null = null;
      for (const [i, w] of binding.entries()) {
        const c = counts[i]!;
        if (c.n < w.cap) continue;
        const rolls = c.oldest === null ? IN_FLIGHT_RETRY_MS : Math.max(1, c.oldest + w.ms - now);
        const retryAfterMs = w.until === null ? rolls : Math.max(1, Math.min(rolls, w.until - now));
        if (!worst || retryAfterMs > worst.retryAfterMs) worst = { retryAfterMs, which: w.name, cap: w.cap };
      }
      return worst;
    },
  };
}
