import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { api, type ApiResponse } from '../helpers/server.js';
import { killAllServeChildren, startServeChild, stop } from '../helpers/serve-child.js';
import { pgSchema } from '../contract/adapters.js';
import { describeWith, dropRedisPrefix, postgres, redis, REDIS_URL, uniqueNamespace, schemaUrl } from '../helpers/services.js';
import { until } from '../helpers/poll.js';

/**
 * A graceful stop never waits for a webhook receiver (docs/webhooks.md "Delivery"):
 * SIGTERM while an attempt trickles its answer (headers at once, then a byte
 * a second) ends `serve` at once with code 0, the attempt abandoned and not
 * recorded, and the event still due: the next start delivers it, same
 * webhook-id. The timeout and the stop timeout are a minute, so a stop that
 * waited for the attempt would outlast this test.
 *
 * `npm run build` must have run first (bin/pasarela imports dist/).
 */

const dirs: string[] = [];
const receivers: Server[] = [];
const cleanups: Array<() => Promise<unknown>> = [];

afterAll(async () => {
  killAllServeChildren();
  for (const r of receivers) {
    r.closeAllConnections();
    r.close();
  }
  for (const c of cleanups) await c().catch(() => undefined);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A receiver that answers 200 at once, or (while `trickle`) 200 and its headers, then a byte a second, never the end. */
async function trickler(): Promise<{ url: string; ids: string[]; trickle: boolean }> {
  const r = { url: '', ids: [] as string[], trickle: true };
  const server = createServer((req, res) => {
    r.ids.push(String(req.headers['webhook-id']));
    req.resume();
    req.on('end', () => {
      if (!r.trickle) return void res.writeHead(200).end('ok');
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('.');
      const t = setInterval(() => res.write('.'), 1000);
      res.on('close', () => clearInterval(t));
    });
  });
  receivers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return r;
}

async function ok(p: Promise<ApiResponse>, status = 200): Promise<any> {
  const r = await p;
  expect(r.status, r.text).toBe(status);
  return r.body;
}

describe('webhook attempts and the graceful stop', () => {
  it('SIGTERM while a receiver trickles its answer: serve exits 0 at once, the event stays due and the next start delivers it', async () => {
    const R = await trickler();
    const { url, ids } = R;

    const root = mkdtempSync(join(tmpdir(), 'pasarela-whstop-'));
    dirs.push(root);
    const dataDir = join(root, 'data');
    const args = ['--allow-private-urls', '--webhook-timeout', '60s', '--stop-timeout', '60s'];
    let s = await startServeChild(dataDir, args);
    const admin = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    const cli = await ok(api(s.url, 'POST', '/admin/clientes', { key: admin, json: { nombre: 'Stop', email: 'whstop@example.com', saldo: 10 } }), 201);
    const key: string = cli.api_key;
    const cel = await ok(api(s.url, 'POST', '/api/celular_crear.php', { key, json: { numero: '5215512340001' } }), 201);
    await ok(api(s.url, 'POST', '/api/webhook.php', { key, json: { url, eventos: ['session.status'] } }));
    // A real event: asking for a QR starts a session (need_scan) -> session.status.
    await ok(api(s.url, 'POST', `/api/celular_qr.php?id=${cel.celular_id}`, { key }));
    await until(() => ids.length > 0, { what: 'the attempt to the trickling receiver' });
    const id = ids[0]!;

    s.child.kill('SIGTERM');
    const r = await s.child;
    expect(r.exitCode, String(r.stderr)).toBe(0);
    // Stopped without reaching --stop-timeout: nothing was waited for.
    expect(String(r.stderr)).toMatch(/pasarela stopped$/);

    R.trickle = false;
    s = await startServeChild(dataDir, args);
    type Entrega = { id: string; estado: string; intentos_detalle: Array<{ status: number | null; error: string | null }> };
    let e: Entrega | undefined;
    await until(
      async () => {
        const list = await ok(api(s.url, 'GET', '/api/webhook_entregas.php', { key }));
        e = (list.entregas as Entrega[]).find((x) => x.id === id);
        return e?.estado === 'entregado';
      },
      { what: 'the abandoned event delivered after the restart' },
    );
    // The abandoned attempt was not one of the schedule: the only attempt recorded is the one that succeeded.
    expect(e!.intentos_detalle).toEqual([expect.objectContaining({ status: 200, error: null })]);
    expect(ids).toEqual([id, id]);
    await stop(s);
  }, 40_000);
});

describeWith(postgres, 'webhook attempts abandoned by a stop, on two PostgreSQL nodes', () => {
  describeWith(redis, 'and Redis', () => {
    it('SIGTERM of the node whose attempt trickles: it exits 0 at once, and the other node delivers the event, no new event needed', async () => {
      const R = await trickler();
      const sc = await pgSchema();
      cleanups.push(sc.drop);
      const prefix = uniqueNamespace('redis');
      cleanups.push(() => dropRedisPrefix(prefix));
      const u = new URL(schemaUrl(sc.schema));
      const args = ['--store', u.toString(), '--counters', REDIS_URL, '--counters-prefix', prefix, '--allow-private-urls', '--webhook-timeout', '60s'];
      const [da, db] = [mkdtempSync(join(tmpdir(), 'pasarela-whstop-a-')), mkdtempSync(join(tmpdir(), 'pasarela-whstop-b-'))];
      dirs.push(da, db);
      const a = await startServeChild(da, args);
      const b = await startServeChild(db, args);
      const admin = readFileSync(join(da, 'admin-token'), 'utf8').trim();
      const cli = await ok(api(a.url, 'POST', '/admin/clientes', { key: admin, json: { nombre: 'Stop PG', email: 'whstop.pg@example.com', saldo: 1 } }), 201);
      const key: string = cli.api_key;
      await ok(api(a.url, 'POST', '/api/webhook.php', { key, json: { url: R.url } }));
      // Queued through A, which posts it at once (and holds the client's stream while it does).
      const { id } = await ok(api(a.url, 'POST', '/api/webhook_test.php', { key }));
      await until(() => R.ids.length > 0, { what: 'the attempt to the trickling receiver' });
      expect(R.ids).toEqual([id]);

      R.trickle = false;
      a.child.kill('SIGTERM');
      const r = await a.child;
      expect(r.exitCode, String(r.stderr)).toBe(0);
      expect(String(r.stderr)).toMatch(/pasarela stopped$/);
      // B finds the client's due delivery on its own (no event of that client reaches it) and delivers it.
      let e: { id: string; estado: string; intentos: number } | undefined;
      await until(
        async () => {
          const list = await ok(api(b.url, 'GET', '/api/webhook_entregas.php', { key }));
          e = (list.entregas as Array<typeof e & object>).find((x) => x.id === id);
          return e?.estado === 'entregado';
        },
        { what: 'the abandoned event delivered by the other node', timeoutMs: 30_000 },
      );
      expect(e).toMatchObject({ intentos: 1 });
      expect(R.ids).toEqual([id, id]);
      await stop(b);
    }, 60_000);
  });
});
