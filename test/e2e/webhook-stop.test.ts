import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { api, type ApiResponse } from '../helpers/server.js';
import { killAllServeChildren, startServeChild, stop } from '../helpers/serve-child.js';
import { until } from '../helpers/poll.js';

/**
 * A graceful stop never waits for a webhook receiver (README "Delivery"):
 * SIGTERM while an attempt trickles its answer (headers at once, then a byte
 * a second) ends `serve` at once with code 0, the attempt abandoned and not
 * recorded, and the event still due: the next start delivers it, same
 * webhook-id. The timeout and the stop timeout are a minute, so a stop that
 * waited for the attempt would outlast this test.
 *
 * `npm run build` must have run first (bin/pasarela imports dist/).
 */

const dirs: string[] = [];
let receiver: Server | undefined;

afterAll(() => {
  killAllServeChildren();
  receiver?.closeAllConnections();
  receiver?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function ok(p: Promise<ApiResponse>, status = 200): Promise<any> {
  const r = await p;
  expect(r.status, r.text).toBe(status);
  return r.body;
}

describe('webhook attempts and the graceful stop', () => {
  it('SIGTERM while a receiver trickles its answer: serve exits 0 at once, the event stays due and the next start delivers it', async () => {
    let trickle = true;
    const ids: string[] = [];
    receiver = createServer((req, res) => {
      ids.push(String(req.headers['webhook-id']));
      req.resume();
      req.on('end', () => {
        if (!trickle) return void res.writeHead(200).end('ok');
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('.');
        const t = setInterval(() => res.write('.'), 1000);
        res.on('close', () => clearInterval(t));
      });
    });
    await new Promise<void>((r) => receiver!.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

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

    trickle = false;
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
