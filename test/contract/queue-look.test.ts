import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { slotClaim } from '../../src/core/sending/caps.js';
import type { CelularRow } from '../../src/core/ports/model.js';
import { ADAPTERS, celular, messages, newCliente, storeEachTest } from './adapters.js';

/**
 * The queue worker's look (D-143): every line with a backlog and its head's
 * next attempt, read beside the head's place in the queue; the whole message
 * only for a head due now. A batch of lines due and not due, on both dialects.
 */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: QueueStore.queueLook`, () => {
    const ctx = storeEachTest(adapter);

    /** `n` lines of one client with a balance; `queue(line, at)` accepts a queued message on it. */
    async function lines(n: number) {
      const c = await newCliente(ctx.store);
      await ctx.store.changeBalance({ cliente_id: c.id, celular_id: null, monto: 1000, motivo: 'recarga', actor: 'op' }, 1000);
      const cels: CelularRow[] = [];
      for (let i = 0; i < n; i++) {
        const r = await ctx.store.insertCelular(celular(c.id, `5255123456${String(i).padStart(2, '0')}`), 1000);
        if (!r.ok) throw new Error('insert');
        cels.push(r.celular);
      }
      const queue = async (cel: CelularRow, at: number) => {
        const m = { ...messages(c.id, cel.id)(), msg_id: randomUUID() };
        expect((await ctx.store.acceptMensaje(m, { charge: true, maxPending: null }, at)).ok).toBe(true);
        return m.msg_id;
      };
      return { cels, queue };
    }
    /** Claims the line's head and gives it back for an attempt at `at` (the worker's transient failure). */
    async function retried(cel: CelularRow, msgId: string, now: number, at: number) {
      expect(await ctx.store.claimQueued(msgId, slotClaim(cel, now, 60_000), now)).toEqual({ ok: true });
      await ctx.store.retryLater(msgId, at, 'gateway down');
    }
    const summary = (look: Awaited<ReturnType<typeof ctx.store.queueLook>>) => ({
      lines: [...look.lines].sort((x, y) => x.celular_id - y.celular_id),
      due: look.due.map((m) => m.msg_id).sort(),
    });

    it('lines due and not due: every line with a backlog and its head retry time; only the due heads read whole', async () => {
      const { cels, queue } = await lines(7);
      // The seventh line never has a backlog: it is in no look.
      const [fresh1, fresh2, later1, later2, past, emptied] = cels;
      const heads = new Map<number, string>();
      for (const cel of [fresh1, fresh2, later1, later2, past, emptied]) {
        heads.set(cel!.id, await queue(cel!, 2000));
        // Two behind each head: a line is one entry whatever its backlog.
        await queue(cel!, 2001);
        await queue(cel!, 2002);
      }
      await retried(later1!, heads.get(later1!.id)!, 3000, 100_000);
      await retried(later2!, heads.get(later2!.id)!, 3000, 200_000);
      await retried(past!, heads.get(past!.id)!, 3000, 4000);
      // A line whose backlog ended leaves the look; a line that never had one is not in it.
      const rest = (await ctx.store.listQueue([emptied!.id], 0, 10)).map((m) => m.msg_id);
      for (const id of rest) expect((await ctx.store.cancelQueued(id, 'cancelled', 3500)).ok).toBe(true);

      const look = await ctx.store.queueLook(5000);
      expect(summary(look)).toEqual({
        lines: [
          { celular_id: fresh1!.id, proximo_intento_at: null },
          { celular_id: fresh2!.id, proximo_intento_at: null },
          { celular_id: later1!.id, proximo_intento_at: 100_000 },
          { celular_id: later2!.id, proximo_intento_at: 200_000 },
          // Something due now: no wake time (D-162).
          { celular_id: past!.id, proximo_intento_at: null },
        ].sort((x, y) => x.celular_id - y.celular_id),
        due: [fresh1, fresh2, past].map((c) => heads.get(c!.id)!).sort(),
      });
      // The due heads whole, as queueHeads reads them.
      const whole = new Map((await ctx.store.queueHeads()).map((m) => [m.msg_id, m]));
      for (const m of look.due) expect(m).toEqual(whole.get(m.msg_id));
      expect(look.due.find((m) => m.celular_id === past!.id)).toMatchObject({ intentos: 1, proximo_intento_at: 4000, error: 'gateway down' });

      // Once a retry time passes, its head is read whole.
      expect(summary(await ctx.store.queueLook(100_000)).due).toEqual([fresh1, fresh2, later1, past].map((c) => heads.get(c!.id)!).sort());
      // A deferred head that ends (sent after its retry): the next one behind it is due, with no retry of its own.
      expect(await ctx.store.claimQueued(heads.get(later2!.id)!, slotClaim(later2!, 200_000, 60_000), 200_000)).toEqual({ ok: true });
      expect(await ctx.store.markSent(heads.get(later2!.id)!, 'G-1', 200_001)).toMatchObject({ estado: 'enviado' });
      const after = await ctx.store.queueLook(5000);
      expect(after.lines.find((l) => l.celular_id === later2!.id)).toEqual({ celular_id: later2!.id, proximo_intento_at: null });
      expect(after.due.filter((m) => m.celular_id === later2!.id).map((m) => m.msg_id)).toHaveLength(1);
      expect(after.due.some((m) => m.msg_id === heads.get(later2!.id))).toBe(false);
    });

    it("per recipient (D-162): a deferred message holds back its recipient's newer ones only; a scheduled backlog is never due early", async () => {
      const { cels } = await lines(1);
      const cel = cels[0]!;
      const c = cel.cliente_id;
      const make = messages(c, cel.id);
      const queueTo = async (destinatario: string, at: number, enviar_en?: number) => {
        const m = { ...make(), msg_id: randomUUID(), destinatario, ...(enviar_en ? { enviar_en } : {}) };
        expect((await ctx.store.acceptMensaje(m, { charge: true, maxPending: null }, at)).ok).toBe(true);
        return m.msg_id;
      };
      const a1 = await queueTo('14155550001', 2000);
      const a2 = await queueTo('14155550001', 2001);
      const later = await queueTo('14155550003', 2002, 50_000);
      const b1 = await queueTo('14155550002', 2003);
      await retried(cel, a1, 3000, 100_000);
      // a1 waits for its retry, a2 behind it (same recipient), `later` for its time: b1 is the line's next.
      let look = await ctx.store.queueLook(5000);
      expect(look.due.map((m) => m.msg_id)).toEqual([b1]);
      expect(look.lines).toEqual([{ celular_id: cel.id, proximo_intento_at: null }]);
      // The guessed claim's test is per recipient too: a2 is not its recipient's first, b1 is.
      expect(await ctx.store.claimQueued(a2, slotClaim(cel, 5000, 60_000), 5000, true)).toEqual({ ok: false, reason: 'taken' });
      expect(await ctx.store.claimQueued(b1, slotClaim(cel, 5000, 60_000), 5000, true)).toEqual({ ok: true });
      expect(await ctx.store.markSent(b1, 'G-b1', 5001)).toMatchObject({ estado: 'enviado' });
      // Nothing due: the line wakes when its first deferred message is (`later`, at 50 000).
      look = await ctx.store.queueLook(6000);
      expect(look).toEqual({ lines: [{ celular_id: cel.id, proximo_intento_at: 50_000 }], due: [], expiry: { expired: false, next: null } });
      expect(await ctx.store.claimQueued(later, slotClaim(cel, 6000, 60_000), 6000, true)).toEqual({ ok: false, reason: 'taken' });
      look = await ctx.store.queueLook(50_000);
      expect(look.due.map((m) => m.msg_id)).toEqual([later]);
      expect(look.due[0]).toMatchObject({ enviar_en: 50_000, proximo_intento_at: 50_000, intentos: 0 });
      await ctx.store.cancelQueued(later, 'cancelled', 50_001);
      // a1's retry due: a1 first, then a2.
      look = await ctx.store.queueLook(100_000);
      expect(look.due.map((m) => m.msg_id)).toEqual([a1]);
    });

    it('lines left unread (D-143): in the look as lines with a head due, their heads not read; batches of 1 and of many', async () => {
      const { cels, queue } = await lines(5);
      const heads = new Map<number, string>();
      for (const cel of cels) {
        heads.set(cel.id, await queue(cel, 2000));
        await queue(cel, 2001);
      }
      // The last line's head waits for a retry: unread or not, the look tells when.
      const waiting = cels[4]!;
      await retried(waiting, heads.get(waiting.id)!, 3000, 100_000);
      const all = summary(await ctx.store.queueLook(5000));
      expect(all.due).toHaveLength(4);
      const ids = cels.map((c) => c.id);
      for (const unread of [[ids[0]!], ids.slice(0, 3), ids, [987_654]]) {
        const look = summary(await ctx.store.queueLook(5000, unread));
        expect(look.lines).toEqual(all.lines);
        const read = cels.slice(0, 4).filter((c) => !unread.includes(c.id));
        expect(look.due).toEqual(read.map((c) => heads.get(c.id)!).sort());
      }
      expect(all.lines.find((l) => l.celular_id === waiting.id)).toEqual({ celular_id: waiting.id, proximo_intento_at: 100_000 });
      expect(summary(await ctx.store.queueLook(5000, []))).toEqual(all);
    });

    it('an empty queue: no lines, nothing due, nothing to expire', async () => {
      expect(await ctx.store.queueLook(1000)).toEqual({ lines: [], due: [], expiry: { expired: false, next: null } });
    });
  });
}
