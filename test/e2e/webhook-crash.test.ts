import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { api, type ApiResponse } from '../helpers/server.js';
import { crash, killAllServeChildren, startServeChild, stop, type ServeChild } from '../helpers/serve-child.js';
import { expectEnvelope, expectSigned, startReceiver, type Receiver } from '../server/webhook-helpers.js';
import { until } from '../helpers/poll.js';

/**
 * The webhook outbox survives `kill -9` (docs/design.md §7, docs/webhooks.md "Delivery"):
 * the real binary is killed in the middle of a retry schedule, or while an
 * attempt is in flight, then started again on the same data directory; the
 * event still arrives, with the same webhook-id and body bytes, and the
 * attempts made before the crash stay listed.
 *
 * `npm run build` must have run first (bin/pasarela imports dist/).
 */

const SECRET = 'crash-test-secret-0123456789abcdefghij';

type Server = ServeChild;

const dirs: string[] = [];
const receivers: Receiver[] = [];

afterAll(async () => {
  // A failed assertion must not leave a server running.
  killAllServeChildren();
  for (const r of receivers) await r.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const startServe = (dataDir: string) => startServeChild(dataDir, ['--allow-private-urls', '--webhook-retry-ms', '300']);

/** The test helpers' HTTP call, in this file's argument order. */
const call = (base: string, method: string, path: string, key: string, json?: unknown) => api(base, method, path, { key, json });

async function ok(p: Promise<ApiResponse>, status = 200): Promise<any> {
  const r = await p;
  expect(r.status, r.text).toBe(status);
  return r.body;
}

interface Entrega {
  id: string;
  estado: string;
  intentos: number;
  intentos_detalle: Array<{ n: number; status: number | null; error: string | null }>;
}

async function entrega(base: string, key: string, id: string): Promise<Entrega | undefined> {
  const b = await ok(call(base, 'GET', '/api/webhook_entregas.php?limit=500', key));
  return (b.entregas as Entrega[]).find((e) => e.id === id);
}

/** A data directory, a client with one celular, its webhook pointing at `receiver` (signed); returns the running server. */
async function setUp(receiver: Receiver): Promise<{ s: Server; dataDir: string; key: string; celularId: number }> {
  const root = mkdtempSync(join(tmpdir(), 'pasarela-whcrash-'));
  dirs.push(root);
  const dataDir = join(root, 'data');
  const s = await startServe(dataDir);
  const admin = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
  const cli = await ok(call(s.url, 'POST', '/admin/clientes', admin, { nombre: 'Hooks crash', email: 'whcrash@example.com', saldo: 10 }), 201);
  const key: string = cli.api_key;
  const numero = `52155${String(10_000_000 + Math.floor(Math.random() * 89_999_999))}`;
  const cel = await ok(call(s.url, 'POST', '/api/celular_crear.php', key, { numero }), 201);
  await ok(call(s.url, 'POST', '/api/webhook.php', key, { url: `${receiver.url}/hook`, secret: SECRET, eventos: ['session.status'] }));
  return { s, dataDir, key, celularId: cel.celular_id };
}

describe('webhook outbox: SIGKILL and restart', () => {
  it('killed between two failed attempts of the retry schedule: after the restart the same event (same webhook-id, same bytes) is delivered, the earlier attempts still listed', async () => {
    const R = await startReceiver(500);
    receivers.push(R);
    const started = await setUp(R);
    const { dataDir, key, celularId } = started;
    let { s } = started; // replaced by the restarted server

    // A real event: asking for a QR starts a session (need_scan) -> session.status.
    await ok(call(s.url, 'POST', `/api/celular_qr.php?id=${celularId}`, key));
    const first = await R.wait((h) => h.headers['x-service-event'] === 'session.status', 5000, 'the first attempt');
    const id = first.json.id as string;
    expectEnvelope(first, 'session.status', first.json.cliente_id);
    expect(first.json.data).toMatchObject({ celular_id: celularId, status: 'need_scan' });
    let before: Entrega | undefined;
    await until(async () => ((before = await entrega(s.url, key, id))?.intentos ?? 0) >= 1, { what: 'the first failed attempt recorded' });
    await crash(s);
    expect(before).toMatchObject({ estado: 'pendiente' });
    const failedBefore = before!.intentos;
    expect(failedBefore).toBeGreaterThanOrEqual(1);
    expect(before!.intentos_detalle.every((a) => a.status === 500)).toBe(true);

    R.answer = 200;
    s = await startServe(dataDir);
    const done = await (async () => {
      let e: Entrega | undefined;
      await until(async () => (e = await entrega(s.url, key, id))?.estado === 'entregado', { what: 'delivered after the restart', timeoutMs: 8000 });
      return e!;
    })();
    // Every attempt before the crash is still there, followed by the successful one.
    expect(done.intentos).toBeGreaterThanOrEqual(failedBefore + 1);
    expect(done.intentos_detalle.map((a) => a.n)).toEqual(Array.from({ length: done.intentos }, (_, i) => i + 1));
    expect(done.intentos_detalle.slice(0, failedBefore)).toEqual(before!.intentos_detalle);
    expect(done.intentos_detalle.at(-1)).toMatchObject({ status: 200, error: null });
    expect(done.intentos_detalle.slice(0, -1).every((a) => a.status === 500)).toBe(true);

    // (An attempt answered just as the process died may have reached the receiver unrecorded: at least once.)
    const hits = R.of(id);
    expect(hits.length).toBeGreaterThanOrEqual(done.intentos);
    const last = hits.at(-1)!;
    expect(last.headers['webhook-id']).toBe(id);
    expect(last.raw.equals(first.raw)).toBe(true);
    expectSigned(last, SECRET);
    // Delivered with a 200: the row is final (no attempt is due) and, once the
    // node has stopped (a stop waits for attempts in flight), none was made.
    const cfg = await ok(call(s.url, 'GET', '/api/webhook.php', key));
    expect(cfg).toMatchObject({ configurado: true, has_secret: true, activo: true, eventos: ['session.status'] });
    expect(await entrega(s.url, key, id)).toMatchObject({ estado: 'entregado', intentos: done.intentos });
    await stop(s);
    expect(R.of(id)).toHaveLength(hits.length);
  }, 40_000);

  it('killed while an attempt is in flight: the unrecorded attempt is made again after the restart, same webhook-id', async () => {
    const R = await startReceiver('hang');
    receivers.push(R);
    const started = await setUp(R);
    const { dataDir, key, celularId } = started;
    let { s } = started; // replaced by the restarted server
    await ok(call(s.url, 'POST', `/api/celular_qr.php?id=${celularId}`, key));
    const first = await R.wait((h) => h.headers['x-service-event'] === 'session.status', 5000, 'the hanging attempt');
    const id = first.json.id as string;
    expect(await entrega(s.url, key, id)).toMatchObject({ estado: 'pendiente', intentos: 0 });
    await crash(s);

    R.answer = 200;
    s = await startServe(dataDir);
    let e: Entrega | undefined;
    await until(async () => (e = await entrega(s.url, key, id))?.estado === 'entregado', { what: 'delivered after the restart', timeoutMs: 8000 });
    expect(e!.intentos_detalle.map((a) => a.status)).toEqual([200]);
    const hits = R.of(id);
    expect(hits).toHaveLength(2);
    expect(hits[1]!.raw.equals(first.raw)).toBe(true);
    expectSigned(hits[1]!, SECRET);
    await stop(s);
  }, 40_000);
});
