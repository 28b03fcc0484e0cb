import { expect, it } from 'vitest';
import { expectOk } from '../helpers/expect.js';
import { until } from '../helpers/poll.js';
import { describeWith, postgres } from '../helpers/services.js';
import { linkedLine, send, TEXT, uniqueText } from './send-helpers.js';
import { entregas, pgServersWithReceiver, setWebhook, waitFor } from './webhook-helpers.js';

/**
 * A burst of one client's events on PostgreSQL, where a claim that took all
 * that was due is followed by the next only after the claim gap (D-82): the
 * events made meanwhile are found by the look that wakes at the gap's end,
 * with no step and no further event, each delivered once and recorded once.
 */
describeWith(postgres, 'a burst of one client events (PostgreSQL)', () => {
  const start = pgServersWithReceiver();

  it('every message.status of a burst of queued sends reaches the receiver once and is recorded delivered at its first attempt (PostgreSQL)', async () => {
    const { s, R } = await start({ simDeliveryMs: 5, simReadMs: 10, queue: { gapMinMs: 0, gapMaxMs: 0 } });
    const L = await linkedLine(s);
    expectOk(await setWebhook(s, L.clientKey, { url: R.url, eventos: ['message.status'] }));
    const sends = await Promise.all(Array.from({ length: 8 }, () => send(s, L, TEXT, { destinatario: '525598765432', mensaje: uniqueText('burst') })));
    for (const r of sends) expect(r.status, r.text).toBe(200);
    const ids = new Set(sends.map((r) => r.body.msg_id as string));
    const mine = () => R.hits.filter((h) => h.headers['x-service-event'] === 'message.status' && ids.has(h.json.data.msg_id as string));
    // Four changes per message: pendiente, enviado, entregado, leido.
    await waitFor(() => mine().length >= 32, 'the 32 message.status deliveries', 20_000);
    const byId = new Map<string, number>();
    for (const h of mine()) byId.set(h.json.id as string, (byId.get(h.json.id as string) ?? 0) + 1);
    expect(byId.size).toBe(32);
    expect([...byId.values()].every((n) => n === 1)).toBe(true);
    const rows = await until(
      async () => {
        const list = (await entregas(s, L.clientKey)).filter((e) => byId.has(e.id));
        return list.length === 32 && list.every((e) => e.estado !== 'pendiente') ? list : null;
      },
      { what: 'the 32 deliveries recorded', timeoutMs: 20_000 },
    );
    for (const e of rows) expect(e).toMatchObject({ estado: 'entregado', intentos: 1 });
  });

  it('a client at its in-flight limit: each finished attempt frees its slot, and its record rides on the next claim (D-192)', async () => {
    const { s, R } = await start({ simDeliveryMs: 5, simReadMs: 10, queue: { gapMinMs: 0, gapMaxMs: 0 }, webhookClientConcurrency: 2 });
    const L = await linkedLine(s);
    expectOk(await setWebhook(s, L.clientKey, { url: R.url, eventos: ['message.status'] }));
    // Records written alone, and records carried by a claim (one round trip for both).
    let alone = 0;
    let carried = 0;
    const store = s.core.store;
    const write = store.recordAttempts.bind(store);
    store.recordAttempts = async (list) => ((alone += list.length), write(list));
    const both = store.recordAndClaim.bind(store);
    store.recordAndClaim = async (list, req) => ((carried += list.length), both(list, req));
    const sends = await Promise.all(Array.from({ length: 8 }, () => send(s, L, TEXT, { destinatario: '525598765432', mensaje: uniqueText('limit') })));
    for (const r of sends) expect(r.status, r.text).toBe(200);
    const ids = new Set(sends.map((r) => r.body.msg_id as string));
    const mine = () => R.hits.filter((h) => h.headers['x-service-event'] === 'message.status' && ids.has(h.json.data.msg_id as string));
    await waitFor(() => mine().length >= 32, 'the 32 message.status deliveries', 20_000);
    await until(async () => ((await entregas(s, L.clientKey)).filter((e) => e.estado === 'pendiente').length === 0 ? true : null), {
      what: 'every delivery recorded',
      timeoutMs: 20_000,
    });
    expect(new Set(mine().map((h) => h.json.id as string)).size).toBe(32);
    expect(alone + carried).toBeGreaterThanOrEqual(32);
    // While records held their slots, a client at its limit wrote each round's records alone, then claimed: 13 of 32 rode here then; 31 now.
    expect(carried, `${carried} carried, ${alone} alone`).toBeGreaterThanOrEqual(24);
  });
});
