import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { systemClock } from '../../src/core/time/clock.js';
import { pgSchema } from '../contract/adapters.js';
import { api, startTestServer, tempDir, type ApiResponse, type TestServer } from '../helpers/server.js';
import { crash, killAllServeChildren, startServeChild, type ServeChild } from '../helpers/serve-child.js';
import { describeWith, dropRedisPrefix, postgres, redis, REDIS_URL, uniqueNamespace, schemaUrl } from '../helpers/services.js';
import { until } from '../helpers/poll.js';
import { linkedLine, numeroNuevo, TEXT, uniqueText, type Line } from '../server/send-helpers.js';

/**
 * A node killed with SIGKILL, seen from a live one, on PostgreSQL + Redis:
 * `/health` stops counting it once it has been silent for the takeover
 * margin (not its stale time, minutes by default), and the Idempotency-Key
 * turns it held (killed between a key's look-up and its acceptance) are
 * taken over then: the repeats are told the real wait, never "retry in a
 * second" for a minute, and then send.
 *
 * Node 0 runs in this process with a short margin (3 s; 10 s in `serve`),
 * so it judges the others by it; node 1 is a real `serve` process.
 */

const MARGIN_MS = 3000;
const KEYS = 3;

let node0: TestServer;
let node1: ServeChild;
let db: pg.Client;
let schema: { schema: string; drop: () => Promise<void> };
let prefix: string;
let line: Line;
let storeUrl: string;

describeWith(postgres, 'a node killed with SIGKILL', () => {
  beforeAll(async () => {
    if (!redis.available) return;
    schema = await pgSchema();
    const u = new URL(schemaUrl(schema.schema));
    storeUrl = u.toString();
    db = new pg.Client({ connectionString: u.toString() });
    await db.connect();
    prefix = uniqueNamespace('redis');
    const counters = { counters: REDIS_URL, countersPrefix: prefix };
    node0 = await startTestServer({
      store: u.toString(),
      ...counters,
      clock: systemClock,
      nodeBeatMs: 200,
      nodeTakeoverMarginMs: MARGIN_MS,
      queue: { gapMinMs: 0, gapMaxMs: 0 },
    });
    node1 = await startServeChild(join(tempDir(), 'node1'), ['--store', u.toString(), '--counters', REDIS_URL, '--counters-prefix', prefix]);
    line = await linkedLine(node0, { saldo: 100 });
  }, 60_000);
  afterAll(async () => {
    killAllServeChildren();
    await node0?.stop();
    await db?.end();
    await schema?.drop();
    if (prefix) await dropRedisPrefix(prefix);
  });

  it.skipIf(!redis.available)(
    'its Idempotency-Key turns are taken over once it counts as gone: the repeats are told the real wait, then send',
    async () => {
      await until(async () => (await api(node0.url, 'GET', '/health')).body.nodos_vivos === 2, { what: 'both nodes counted', timeoutMs: 15_000 });

      // Node 1 takes each key's turn, then waits on the key's look-up (the table is locked here) when it is killed.
      const bodies = Array.from({ length: KEYS }, () => ({ destinatario: numeroNuevo(), mensaje: uniqueText('turno') }));
      const keys = bodies.map((_, i) => `muerto-${i}-${Date.now()}`);
      const post = (base: string, i: number) => api(base, 'POST', TEXT, { key: line.celularKey, json: bodies[i], headers: { 'idempotency-key': keys[i]! } });
      await db.query('BEGIN');
      await db.query('LOCK TABLE idempotencia IN ACCESS EXCLUSIVE MODE');
      const inFlight = bodies.map((_, i) => post(node1.url, i).catch(() => null));
      await until(
        async () =>
          Number(
            (await db.query("SELECT count(*) AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'idempotencia' AND NOT l.granted"))
              .rows[0].n,
          ) >= KEYS,
        { what: "node 1's key look-ups waiting on the lock", timeoutMs: 15_000 },
      );
      await crash(node1);
      await db.query('ROLLBACK');
      await Promise.all(inFlight);

      // Each repeat on node 0, following retry_after as a client does: never longer than the margin.
      const waits: number[] = [];
      for (let i = 0; i < KEYS; i++) {
        const r = await until(
          async () => {
            const a: ApiResponse = await post(node0.url, i);
            if (a.status === 409) {
              expect(a.body.api_codigo, a.text).toBe(608);
              waits.push(a.body.retry_after as number);
              return null;
            }
            return a;
          },
          { what: `the repeat of key ${i} sent`, timeoutMs: 30_000, stepMs: 200 },
        );
        expect(r.status, r.text).toBe(200);
      }
      for (const w of waits) expect(w).toBeLessThanOrEqual(MARGIN_MS / 1000);
      // Each key sent once.
      const h = await api(node0.url, 'GET', '/api/historial_listar.php?por_pagina=100', { key: line.clientKey });
      expect(h.body.mensajes).toHaveLength(KEYS);
    },
    90_000,
  );

  it.skipIf(!redis.available)(
    'a direct send it left in flight is resolved by the repeat of its key once it counts as gone, not minutes later',
    async () => {
      const node2 = await startServeChild(join(tempDir(), 'node2'), ['--store', storeUrl, '--counters', REDIS_URL, '--counters-prefix', prefix]);
      await until(async () => (await api(node0.url, 'GET', '/health')).body.nodos_vivos === 2, { what: 'node 2 counted', timeoutMs: 15_000 });
      const body = { destinatario: numeroNuevo(), mensaje: uniqueText('directo'), directo: 1 };
      // Node 2's record of its send's outcome waits on a lock held here: it has sent, and is killed before it records it.
      // Only this message's: on a loaded machine an earlier test's queued message may still be ending, on another node.
      await db.query('CREATE FUNCTION stall_outcome() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_advisory_xact_lock(424242); RETURN NEW; END $$');
      await db.query(
        `CREATE TRIGGER stall_outcome BEFORE UPDATE ON mensajes FOR EACH ROW
         WHEN (OLD.estado = 'pendiente' AND NEW.estado <> 'pendiente' AND NEW.destinatario = '${body.destinatario}') EXECUTE FUNCTION stall_outcome()`,
      );
      await db.query('SELECT pg_advisory_lock(424242)');
      const key = `muerto-directo-${Date.now()}`;
      const post = (base: string) => api(base, 'POST', TEXT, { key: line.celularKey, json: body, headers: { 'idempotency-key': key } });
      const first = post(node2.url).catch(() => null);
      const waiting = "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted";
      await until(async () => (await db.query(waiting)).rowCount! > 0, { what: "node 2's outcome waiting on the lock", timeoutMs: 15_000 });
      await crash(node2);
      // Its connection's statement dies with it (a killed client's backend would go on once the lock is free).
      await db.query(`SELECT pg_terminate_backend(pid) FROM (${waiting}) w`);
      await db.query('SELECT pg_advisory_unlock(424242)');
      await db.query('DROP TRIGGER stall_outcome ON mensajes');
      await db.query('DROP FUNCTION stall_outcome()');
      await first;

      // The repeat on node 0, following retry_after: the send is resolved (the simulator says it went) within the margin.
      const waits: number[] = [];
      const r = await until(
        async () => {
          const a: ApiResponse = await post(node0.url);
          if (a.status === 409) {
            expect(a.body.api_codigo, a.text).toBe(608);
            waits.push(a.body.retry_after as number);
            return null;
          }
          return a;
        },
        { what: 'the repeat answered with the send', timeoutMs: 30_000, stepMs: 200 },
      );
      expect(r.status, r.text).toBe(200);
      expect(r.body.estado).toBe('enviado');
      for (const w of waits) expect(w).toBeLessThanOrEqual(MARGIN_MS / 1000);
      const rows = await db.query('SELECT estado FROM mensajes WHERE msg_id = $1', [r.body.msg_id]);
      expect(rows.rows).toHaveLength(1);
      expect(['enviado', 'entregado', 'leido']).toContain(rows.rows[0].estado);
    },
    90_000,
  );

  it.skipIf(!redis.available)('/health counts it out within the margin, not after its stale time (2 min 20 s by default)', async () => {
    expect(node1.child.exitCode ?? node1.child.signalCode).toBeTruthy();
    await until(async () => (await api(node0.url, 'GET', '/health')).body.nodos_vivos === 1, { what: 'the dead node no longer counted', timeoutMs: 15_000 });
  });
});
