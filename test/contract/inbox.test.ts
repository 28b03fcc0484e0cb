import { describe, expect, it } from 'vitest';
import type { InboxFilter, NewRecibido } from '../../src/core/ports/messages.js';
import type { Store } from '../../src/core/ports/store.js';
import type { PgStore } from '../../src/store/postgres/store.js';
import type { SqliteStore } from '../../src/store/sqlite/store.js';
import { ADAPTERS, celular, newCliente, storeEachTest } from './adapters.js';

const Q = 900_000;

/** The kept counts against the rows, read in the store itself: each count table's sum, its rows at 0 or less, and COUNT(*). */
async function kept(store: Store): Promise<{ lines: number; quarters: number; empty: number; rows: number }> {
  const sql = `SELECT
    (SELECT COALESCE(SUM(n), 0) FROM conteos_recibidos) AS lines,
    (SELECT COALESCE(SUM(n), 0) FROM conteos_recibidos_cuartos) AS quarters,
    (SELECT COUNT(*) FROM conteos_recibidos_cuartos WHERE n <= 0) + (SELECT COUNT(*) FROM conteos_recibidos WHERE n < 0) AS empty,
    (SELECT COUNT(*) FROM recibidos) AS rows`;
  const r =
    store.caps.name === 'sqlite'
      ? (store as SqliteStore).db.prepare(sql).get()
      : store.caps.name === 'postgres'
        ? (await (store as PgStore).db.q(sql))[0]
        : null;
  if (!r) throw new Error('a store this test cannot read');
  const o = r as Record<string, number | string>;
  return { lines: Number(o.lines), quarters: Number(o.quarters), empty: Number(o.empty), rows: Number(o.rows) };
}

/** The inbox (docs/design.md §10): kept with the inbound dedupe, listed by filter and page, purged by age. */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: inbox contract`, () => {
    const ctx = storeEachTest(adapter);

    async function lines() {
      const c = await newCliente(ctx.store);
      const other = await newCliente(ctx.store);
      const ids: number[] = [];
      for (const [cli, numero] of [
        [c.id, '525512345678'],
        [c.id, '525512345679'],
        [other.id, '525512345670'],
      ] as const) {
        const cel = await ctx.store.insertCelular(celular(cli, numero), 1000);
        if (!cel.ok) throw new Error('insert');
        ids.push(cel.celular.id);
      }
      return { cliente: c.id, otro: other.id, l1: ids[0]!, l2: ids[1]!, l3: ids[2]! };
    }

    let n = 0;
    /** One incoming message recorded at `now` under a key of its own (or `clave`); true unless a repeat. */
    const receive = (
      cliente_id: number,
      celular_id: number,
      de: string,
      now: number,
      extra: Partial<NewRecibido> & { clave?: string | null; store?: Store } = {},
    ) => {
      n += 1;
      const { clave, store = ctx.store, ...rest } = extra;
      const r: NewRecibido = { cliente_id, celular_id, de, tipo: 'texto', texto: `m${n}`, media: null, gateway_msg_id: `G${n}`, fecha: now - 500, ...rest };
      return store.journalInbound(
        { evento: 'messages.received', cliente_id, celular_id, data: { texto: r.texto }, fecha: now },
        clave === undefined ? `test:${n}` : clave,
        now,
        r,
      );
    };
    const texts = async (f: InboxFilter) => (await ctx.store.listRecibidos(f)).rows.map((r) => r.texto);

    it('keeps every field as given, media as JSON; a repeated key writes no second row', async () => {
      const l = await lines();
      const media = { mime: 'image/jpeg', filename: 'foto.jpg', bytes: 12345, url: 'https://gw.example/f/1' };
      expect(
        await receive(l.cliente, l.l1, '14155552671', 5000, { tipo: 'imagen', texto: 'pie', media, gateway_msg_id: 'GW-1', fecha: 4000, clave: 'k:1' }),
      ).toBe(true);
      expect(await receive(l.cliente, l.l1, '14155552671', 5001, { texto: 'otra vez', clave: 'k:1' })).toBe(false);
      const { total, rows } = await ctx.store.listRecibidos({ cliente_id: l.cliente, page: 1, por_pagina: 50 });
      expect(total).toBe(1);
      expect(rows).toEqual([
        {
          id: expect.any(Number),
          cliente_id: l.cliente,
          celular_id: l.l1,
          de: '14155552671',
          tipo: 'imagen',
          texto: 'pie',
          media: JSON.stringify(media),
          gateway_msg_id: 'GW-1',
          fecha: 4000,
          created_at: 5000,
        },
      ]);
      // Durable: the same after a restart.
      const again = await ctx.reopen();
      expect((await again.listRecibidos({ cliente_id: l.cliente, page: 1, por_pagina: 50 })).rows).toEqual(rows);
    });

    it('lists newest first (arrival breaks ties), by client, line, sender and days, a page at a time with the total', async () => {
      const l = await lines();
      const senders = ['14155552671', '34612345678', '525599998888'];
      for (let i = 0; i < 12; i += 1) await receive(l.cliente, i % 2 ? l.l2 : l.l1, senders[i % 3]!, 10_000 + Math.floor(i / 2) * 1000);
      await receive(l.otro, l.l3, senders[0]!, 10_500);
      const base = { cliente_id: l.cliente, page: 1, por_pagina: 50 };
      // Two per instant: the later arrival first.
      const all = await texts(base);
      expect(all).toHaveLength(12);
      const byN = (t: string | null) => Number(t!.slice(1));
      for (let i = 1; i < all.length; i += 1) expect(byN(all[i - 1]!)).toBeGreaterThan(byN(all[i]!));
      const first = byN(all[all.length - 1]!);
      const pick = (want: (i: number) => boolean) => all.filter((t) => want(byN(t) - first));
      expect(await texts({ ...base, celular_id: l.l2 })).toEqual(pick((i) => i % 2 === 1));
      expect(await texts({ ...base, de: senders[1] })).toEqual(pick((i) => i % 3 === 1));
      expect(await texts({ ...base, celular_id: l.l1, de: senders[0] })).toEqual(pick((i) => i % 2 === 0 && i % 3 === 0));
      // [12000, 14000): instants 2 and 3, messages 4..7.
      expect(await texts({ ...base, desde: 12_000, hasta: 14_000 })).toEqual(pick((i) => i >= 4 && i <= 7));
      expect(await texts({ ...base, celular_id: l.l1, de: senders[2], desde: 11_000 })).toEqual(pick((i) => i >= 2 && i % 2 === 0 && i % 3 === 2));
      const p2 = await ctx.store.listRecibidos({ ...base, page: 2, por_pagina: 5 });
      expect(p2.total).toBe(12);
      expect(p2.rows.map((r) => r.texto)).toEqual(all.slice(5, 10));
      expect((await ctx.store.listRecibidos({ ...base, page: 4, por_pagina: 5 })).rows).toEqual([]);
      expect(await ctx.store.listRecibidos({ ...base, de: 'nadie' })).toEqual({ total: 0, rows: [] });
      expect(await texts({ cliente_id: l.otro, page: 1, por_pagina: 50 })).toHaveLength(1);
    });

    /** Every row the filter matches, walked page by page: what the total must say. */
    const walked = async (f: Omit<InboxFilter, 'page' | 'por_pagina'>) => {
      let rows = 0;
      for (let page = 1; ; page += 1) {
        const p = await ctx.store.listRecibidos({ ...f, page, por_pagina: 500 });
        rows += p.rows.length;
        if (p.rows.length < 500) return rows;
      }
    };

    it('the total is the count of the rows, by client, line and whole days, through receives and purges on two nodes at once', async () => {
      const l = await lines();
      // Another node on the same store (PostgreSQL); SQLite has one writer, so its operations interleave on one store.
      const other = adapter.name === 'postgres' ? await ctx.node() : ctx.store;
      const base = 100 * 86_400_000;
      const at = (i: number) => base + i * 137_000;
      const q = (k: number) => base + k * Q;
      const filters: Array<Omit<InboxFilter, 'page' | 'por_pagina'>> = [
        { cliente_id: l.cliente },
        { cliente_id: l.cliente, celular_id: l.l1 },
        { cliente_id: l.cliente, celular_id: l.l2 },
        { cliente_id: l.otro },
        { cliente_id: l.otro, celular_id: l.l3 },
        { cliente_id: l.cliente, desde: q(10), hasta: q(60) },
        { cliente_id: l.cliente, hasta: q(30) },
        { cliente_id: l.cliente, celular_id: l.l1, desde: q(20) },
        { cliente_id: l.cliente, celular_id: l.l2, desde: q(5), hasta: q(70) },
        { cliente_id: l.otro, desde: q(0), hasta: q(96) },
        // Not on a quarter: counted over the rows.
        { cliente_id: l.cliente, desde: q(10) + 1234 },
        // A sender: counted over the sender's rows.
        { cliente_id: l.cliente, de: '14155552671' },
      ];
      const check = async (when: string) => {
        for (const f of filters)
          expect((await ctx.store.listRecibidos({ ...f, page: 1, por_pagina: 1 })).total, `${when} ${JSON.stringify(f)}`).toBe(await walked(f));
        const k = await kept(ctx.store);
        expect({ lines: k.lines, quarters: k.quarters, empty: k.empty }, when).toEqual({ lines: k.rows, quarters: k.rows, empty: 0 });
      };
      const lineOf = (i: number): [number, number] => (i % 3 === 0 ? [l.otro, l.l3] : [l.cliente, i % 3 === 1 ? l.l1 : l.l2]);
      const senders = ['14155552671', '34612345678'];
      let next = 0;
      /** `count` messages received on `store`, a few at a time, oldest first. */
      const burst = async (store: Store, count: number) => {
        for (let j = 0; j < count; j += 5) {
          const batch = Array.from({ length: 5 }, () => next++);
          await Promise.all(batch.map((i) => receive(...lineOf(i), senders[i % 2]!, at(i), { store })));
        }
      };
      await burst(ctx.store, 200);
      await check('after 200 received');
      // Rounds of receives on both nodes while both purge, in small batches, what is older than a moving cutoff.
      for (let round = 1; round <= 4; round += 1) {
        const cutoff = at(round * 45);
        const purge = async (store: Store) => {
          let removed = 0;
          for (let got = -1; got !== 0;) removed += got = await store.purgeRecibidos(cutoff, 7);
          return removed;
        };
        await Promise.all([burst(ctx.store, 25), burst(other, 25), purge(ctx.store), purge(other), purge(ctx.store)]);
        await check(`round ${round}`);
      }
      expect(await walked({ cliente_id: l.cliente })).toBeGreaterThan(0);
      // Everything purged: every total 0, and no quarter left behind.
      while ((await ctx.store.purgeRecibidos(at(next) + 1, 100)) > 0);
      await check('all purged');
      expect((await ctx.store.listRecibidos({ cliente_id: l.cliente, page: 1, por_pagina: 1 })).total).toBe(0);
    });

    it("a deleted line's rows stay, under its id", async () => {
      const l = await lines();
      await receive(l.cliente, l.l2, '14155552671', 7000);
      expect(
        await ctx.store.deleteCelular(
          l.l2,
          { actor: 'op', accion: 'borrar', objeto_tipo: 'celular', objeto_id: l.l2, cliente_id: l.cliente, detalle: {} },
          8000,
        ),
      ).toBe(true);
      const { rows } = await ctx.store.listRecibidos({ cliente_id: l.cliente, page: 1, por_pagina: 50 });
      expect(rows.map((r) => r.celular_id)).toEqual([l.l2]);
    });

    it('purges rows recorded before a time, oldest first, at most a batch; purges running together never take a row twice', async () => {
      const l = await lines();
      for (let i = 0; i < 40; i += 1) await receive(i % 2 ? l.cliente : l.otro, i % 2 ? l.l1 : l.l3, '14155552671', 1000 + i);
      expect(await ctx.store.purgeRecibidos(1000, 100)).toBe(0);
      // 1000..1009 are before 1010; a batch of 4 takes the four oldest.
      expect(await ctx.store.purgeRecibidos(1010, 4)).toBe(4);
      const left = async () =>
        [
          ...(await ctx.store.listRecibidos({ cliente_id: l.cliente, page: 1, por_pagina: 100 })).rows,
          ...(await ctx.store.listRecibidos({ cliente_id: l.otro, page: 1, por_pagina: 100 })).rows,
        ]
          .map((r) => r.created_at)
          .sort((a, b) => a - b);
      expect((await left())[0]).toBe(1004);
      expect(await ctx.store.purgeRecibidos(1010, 100)).toBe(6);
      expect((await left())[0]).toBe(1010);
      // Several purges at once (several nodes): every row before 1035 goes exactly once.
      const counts = await Promise.all(Array.from({ length: 4 }, () => ctx.store.purgeRecibidos(1035, 3)));
      let total = counts.reduce((a, b) => a + b, 0);
      while (total < 25) {
        const more = await ctx.store.purgeRecibidos(1035, 3);
        expect(more).toBeGreaterThan(0);
        total += more;
      }
      expect(total).toBe(25);
      expect(await ctx.store.purgeRecibidos(1035, 100)).toBe(0);
      expect(await left()).toEqual([1035, 1036, 1037, 1038, 1039]);
    });
  });
}
