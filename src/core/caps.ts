import type { Core } from './context.js';
import type { CelularRow } from './ports.js';

const WINDOWS = [
  { key: 'minute', cap: 'max_envios_por_minuto', oldest: 'oldestMinute', ms: 60_000, name: 'per minute' },
  { key: 'hour', cap: 'max_envios_por_hora', oldest: 'oldestHour', ms: 3_600_000, name: 'per hour' },
  { key: 'day', cap: 'max_envios_por_dia', oldest: 'oldestDay', ms: 86_400_000, name: 'per day' },
] as const;

/**
 * Per-line send caps over sliding windows, counted from the stored sends (so
 * they hold across restarts and, later, across nodes). When a cap is reached,
 * says when the oldest send in that window leaves it.
 */
export async function capState(core: Core, celular: CelularRow, now: number): Promise<{ ok: true } | { ok: false; retryAfterMs: number; which: string; cap: number }> {
  const counts = await core.store.sentCounts(celular.id, now);
  let worst: { retryAfterMs: number; which: string; cap: number } | null = null;
  for (const w of WINDOWS) {
    const cap = celular[w.cap];
    if (cap === null || counts[w.key] < cap) continue;
    const oldest = counts[w.oldest] ?? now;
    const retryAfterMs = Math.max(1, oldest + w.ms - now);
    if (!worst || retryAfterMs > worst.retryAfterMs) worst = { retryAfterMs, which: w.name, cap };
  }
  return worst ? { ok: false, ...worst } : { ok: true };
}
