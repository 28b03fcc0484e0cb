import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { pgSchema } from '../contract/adapters.js';
import { api, tempDir } from '../helpers/server.js';
import { killAllServeChildren, startServeChild, stop, type ServeChild } from '../helpers/serve-child.js';
import { describeWith, dropRedisPrefix, postgres, redis, REDIS_URL, uniqueNamespace, schemaUrl } from '../helpers/services.js';
import { until } from '../helpers/poll.js';

/**
 * Each webhook event is delivered once in normal running (issue 23, N9): a
 * due delivery is claimed in the statement that picks it, so a read that
 * overlaps an attempt finishing never sends it again. Test events from
 * several clients go in through every node, to a receiver that answers 200
 * after about 20 ms; every webhook-id must arrive exactly once and every
 * delivery end `entregado` after one attempt: one node on SQLite, and three
 * nodes on one PostgreSQL schema and one Redis prefix.
 *
 * PASARELA_TEST_WEBHOOK_EVENTS sets the number of events (the run
 * by hand: 2000); the suite sends 800, enough for the old read-then-filter
 * dispatcher to send a few of them twice on PostgreSQL.
 */
const EVENTS = Number(process.env.PASARELA_TEST_WEBHOOK_EVENTS ?? 800);
/** Waits grow with the run: the default run's bounds, times how many more events a larger one has. */
const SCALE = Math.max(1, EVENTS / 800);
const CLIENTS = 8;

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  killAllServeChildren();
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

/** A receiver that counts requests per webhook-id and answers 200 after about 20 ms. */
async function countingReceiver(): Promise<{ url: string; counts: Map<string, number>; total: () => number }> {
  const counts = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const id = String(req.headers['webhook-id']);
    counts.set(id, (counts.get(id) ?? 0) + 1);
    req.resume();
    req.on('end', () => setTimeout(() => res.writeHead(200).end('ok'), 20));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(
    () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(r);
      }),
  );
  let total = 0;
  server.on('request', () => (total += 1));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, counts, total: () => total };
}

interface Outbox {
  /** Deliveries by estado and attempts, and attempts recorded. */
  read(): Promise<{ entregado: number; once: number; intentos: number }>;
  detail?(ids: string[]): Promise<unknown>;
}

/**
 * Clients with a webhook each, then EVENTS test events sent through the
 * nodes in turn (16 calls at a time); returns the ids the API gave.
 */
async function sendEvents(nodes: ServeChild[], admin: string, url: string): Promise<string[]> {
  const keys: string[] = [];
  for (let c = 0; c < CLIENTS; c++) {
    const at = nodes[c % nodes.length]!;
    const r = await api(at.url, 'POST', '/admin/clientes', {
      key: admin,
      json: { nombre: `Once ${c}`, email: `once${c}.${Date.now()}@example.com`, saldo: 1 },
    });
    expect(r.status, r.text).toBe(201);
    const w = await api(nodes[(c + 1) % nodes.length]!.url, 'POST', '/api/webhook.php', { key: r.body.api_key, json: { url: `${url}/${c}` } });
    expect(w.status, w.text).toBe(200);
    keys.push(r.body.api_key as string);
  }
  const ids: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let i = next++; i < EVENTS; i = next++) {
        const r = await api(nodes[i % nodes.length]!.url, 'POST', '/api/webhook_test.php', { key: keys[i % CLIENTS] });
        expect(r.status, r.text).toBe(200);
        ids.push(r.body.id as string);
      }
    }),
  );
  return ids;
}

async function expectOnce(ids: string[], receiver: Awaited<ReturnType<typeof countingReceiver>>, outbox: Outbox): Promise<void> {
  expect(new Set(ids).size).toBe(EVENTS);
  let last = { entregado: 0, once: 0, intentos: 0 };
  await until(async () => (last = await outbox.read()).entregado === EVENTS, {
    what: `${EVENTS} deliveries ended (last: ${JSON.stringify(last)})`,
    timeoutMs: 120_000 * SCALE,
  });
  // Ended, so no attempt may start any more: what the receiver got is final.
  const twice = [...receiver.counts].filter(([, n]) => n !== 1);
  if (twice.length > 0 && outbox.detail) console.log(JSON.stringify(await outbox.detail(twice.map(([id]) => id)), null, 1));
  expect(twice).toEqual([]);
  expect(receiver.total()).toBe(EVENTS);
  expect([...receiver.counts.keys()].sort()).toEqual([...ids].sort());
  // One attempt each, and none failed: a delivered attempt is recorded on its event, not in a row of its own.
  expect(last).toEqual({ entregado: EVENTS, once: EVENTS, intentos: 0 });
}

describe(`${EVENTS} webhook events, each delivered once`, () => {
  it(
    'on SQLite (one node)',
    async () => {
      const receiver = await countingReceiver();
      const dataDir = join(tempDir(), 'data');
      const node = await startServeChild(dataDir, ['--allow-private-urls'], 300_000);
      const admin = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
      const db = new Database(join(dataDir, 'pasarela.db'), { readonly: true });
      cleanups.push(async () => db.close());
      const ids = await sendEvents([node], admin, receiver.url);
      await expectOnce(ids, receiver, {
        read: async () =>
          db
            .prepare(
              `SELECT (SELECT COUNT(*) FROM eventos WHERE entrega = 'entregado') AS entregado,
                    (SELECT COUNT(*) FROM eventos WHERE entrega IS NOT NULL AND intentos = 1) AS once,
                    (SELECT COUNT(*) FROM webhook_intentos) AS intentos`,
            )
            .get() as { entregado: number; once: number; intentos: number },
      });
      await stop(node);
    },
    240_000 * SCALE,
  );
});

describeWith(postgres, `${EVENTS} webhook events, each delivered once, on three nodes`, () => {
  describeWith(redis, 'sharing one PostgreSQL schema and one Redis prefix', () => {
    it(
      'on PostgreSQL (three nodes)',
      async () => {
        const receiver = await countingReceiver();
        const s = await pgSchema();
        cleanups.push(s.drop);
        const u = new URL(schemaUrl(s.schema));
        const db = new pg.Client({ connectionString: u.toString() });
        await db.connect();
        cleanups.push(() => db.end());
        const prefix = uniqueNamespace('redis');
        cleanups.push(() => dropRedisPrefix(prefix));
        const args = ['--store', u.toString(), '--counters', REDIS_URL, '--counters-prefix', prefix, '--allow-private-urls'];
        const dirs = [tempDir(), tempDir(), tempDir()];
        const nodes: ServeChild[] = [];
        // The first node makes the schema and the operator token; the others take them from the store.
        for (const d of dirs) nodes.push(await startServeChild(d, args, 300_000));
        const admin = readFileSync(join(dirs[0]!, 'admin-token'), 'utf8').trim();
        const ids = await sendEvents(nodes, admin, receiver.url);
        await expectOnce(ids, receiver, {
          read: async () => {
            const r = await db.query(
              `SELECT (SELECT COUNT(*) FROM eventos WHERE entrega = 'entregado')::int AS entregado,
                    (SELECT COUNT(*) FROM eventos WHERE entrega IS NOT NULL AND intentos = 1)::int AS once,
                    (SELECT COUNT(*) FROM webhook_intentos)::int AS intentos`,
            );
            return r.rows[0] as { entregado: number; once: number; intentos: number };
          },
          detail: async (ids) =>
            (
              await db.query(
                'SELECT e.seq, e.cliente_id, e.intentos, e.fecha, e.entregado_at, e.ultimo_status, e.ultima_duracion_ms FROM eventos e WHERE e.seq = ANY($1)',
                [ids.map((id) => Number.parseInt(id.slice(-24), 16))],
              )
            ).rows,
        });
        for (const n of nodes) await stop(n);
      },
      240_000 * SCALE,
    );
  });
});
