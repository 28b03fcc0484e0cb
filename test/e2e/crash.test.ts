import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { api, type ApiResponse } from '../helpers/server.js';
import { until } from '../helpers/poll.js';
import { crash, killAllServeChildren, startServeChild } from '../helpers/serve-child.js';

/**
 * Crash test of the durable queue (docs/design.md §5, §6) against the real binary:
 * `pasarela serve` is killed with SIGKILL while its queue drains, started
 * again on the same data directory, and must then finish every accepted
 * message exactly once, charge each once, and leave no temp file behind.
 *
 * Runs of one scenario, all on one data directory:
 *  1. set-up: a client, 3 linked lines with high caps; ~300 messages queued
 *     (texts and base64 images) with a one-minute gap, so each line sends its
 *     first message and holds the rest: every msg_id is known before the drain.
 *     This run is killed too (a crash with nothing in flight).
 *  2. drain with a short gap; SIGKILL once a given share has been sent.
 *  3. drain to the end; SIGTERM (exit code 0); the SQLite file is then read.
 *
 * `npm run build` must have run first (bin/pasarela imports dist/).
 */

const LINES = 3;
const TEXTS_PER_LINE = 90;
const IMAGES_PER_LINE = 10;
const TOTAL = LINES * (TEXTS_PER_LINE + IMAGES_PER_LINE);
const SALDO = 1_000_000;
/** A 1x1 PNG. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

const dirs: string[] = [];

afterAll(() => {
  // A failed assertion must not leave a server running.
  killAllServeChildren();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const startServe = (dataDir: string, gap: string) => startServeChild(dataDir, ['--queue-gap-ms', gap]);

/** The test helpers' HTTP call, in this file's argument order. */
const call = (base: string, method: string, path: string, key: string, json?: unknown) => api(base, method, path, { key, json });

async function ok(p: Promise<ApiResponse>, status = 200): Promise<any> {
  const r = await p;
  expect(r.status, r.text).toBe(status);
  return r.body;
}

/** Messages of the client still `pendiente`, through the history endpoint. */
async function pending(base: string, key: string): Promise<number> {
  return (await ok(call(base, 'GET', '/api/historial_listar.php?estado=pendiente&por_pagina=1', key))).total as number;
}

async function runScenario(killShare: number): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'pasarela-crash-'));
  dirs.push(root);
  const dataDir = join(root, 'data');

  // Run 1: set-up and queue; a one-minute gap holds every line after its first send.
  let s = await startServe(dataDir, '60000-60000');
  const admin = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
  const cli = await ok(call(s.url, 'POST', '/admin/clientes', admin, { nombre: 'Crash', email: 'crash@example.com', saldo: SALDO }), 201);
  const key: string = cli.api_key;
  const lineas: number[] = [];
  for (let i = 0; i < LINES; i += 1) {
    const numero = `52155${String(10_000_000 + Math.floor(Math.random() * 89_999_999))}`;
    const c = await ok(call(s.url, 'POST', '/api/celular_crear.php', key, { numero }), 201);
    const id: number = c.celular_id;
    await ok(call(s.url, 'POST', `/api/celular_qr.php?id=${id}`, key));
    await ok(call(s.url, 'POST', '/admin/sim/scan', admin, { celular_id: id }));
    await ok(call(s.url, 'POST', `/api/celular_editar.php?id=${id}`, key, { max_envios_por_minuto: 1000, max_envios_por_hora: 50_000 }));
    await until(async () => (await ok(call(s.url, 'GET', `/api/celular.php?id=${id}`, key))).celular.estado === 'activo', { what: `celular ${id} activo` });
    lineas.push(id);
  }

  const jobs: Array<() => Promise<ApiResponse>> = [];
  let n = 0;
  for (const id of lineas) {
    for (let i = 0; i < TEXTS_PER_LINE + IMAGES_PER_LINE; i += 1) {
      n += 1;
      // Distinct recipients, so duplicate protection never refuses one.
      const destinatario = `5255${String(20_000_000 + n * 131)}`;
      jobs.push(
        i < IMAGES_PER_LINE
          ? () => call(s.url, 'POST', '/api/mensaje_enviar_imagen_base64.php', key, { celular_id: id, destinatario, imageBase64: PNG, caption: `img ${n}` })
          : () => call(s.url, 'POST', '/api/mensaje_enviar_texto.php', key, { celular_id: id, destinatario, mensaje: `mensaje ${n} de la prueba de caída` }),
      );
    }
  }
  const accepted: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 6 }, async () => {
      while (next < jobs.length) {
        const r = await jobs[next++]!();
        expect(r.status, r.text).toBe(200);
        expect(r.body.modo).toBe('cola');
        accepted.push(r.body.msg_id as string);
      }
    }),
  );
  expect(accepted).toHaveLength(TOTAL);
  expect(new Set(accepted).size).toBe(TOTAL);
  expect(readdirSync(join(dataDir, 'tmp')).length).toBeGreaterThan(0);
  await crash(s);

  // Run 2: drain with a short gap; kill once `killShare` of the messages is sent. The gap keeps the
  // drain ~7 s long, so the kill lands mid-drain even when a loaded machine is slow to deliver it
  // (20-30 ms let a machine at load 10 drain the whole queue before the kill).
  s = await startServe(dataDir, '60-80');
  const target = Math.round(TOTAL * killShare);
  let left = TOTAL;
  await until(async () => TOTAL - (left = await pending(s.url, key)) >= target, {
    what: () => `${target} of ${TOTAL} sent (${TOTAL - left} so far)`,
    timeoutMs: 60_000,
    stepMs: 0,
  });
  await crash(s);
  {
    // The state the crash left (the process is gone; nothing writes now).
    const db = new Database(join(dataDir, 'pasarela.db'), { readonly: true, fileMustExist: true });
    const { p, t } = db.prepare("SELECT SUM(estado = 'pendiente') AS p, COUNT(*) AS t FROM mensajes").get() as { p: number; t: number };
    db.close();
    expect(t).toBe(TOTAL);
    expect(p, 'some messages still pending at the crash').toBeGreaterThan(0);
    expect(p, 'some messages sent before the crash').toBeLessThan(TOTAL);
  }

  // Run 3: drain to the end, then a graceful stop.
  s = await startServe(dataDir, '0-5');
  await until(async () => (await pending(s.url, key)) === 0, { what: 'the queue drained', timeoutMs: 20_000, stepMs: 50 });
  const saldo = await ok(call(s.url, 'GET', '/api/saldo.php', key));
  expect(saldo.saldo_global).toBe(SALDO - TOTAL);
  s.child.kill('SIGTERM');
  const stopped = await s.child;
  expect(stopped.exitCode, String(stopped.stderr)).toBe(0);

  const db = new Database(join(dataDir, 'pasarela.db'), { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare('SELECT msg_id, estado, gateway_msg_id, error FROM mensajes').all() as Array<{
      msg_id: string;
      estado: string;
      gateway_msg_id: string | null;
      error: string | null;
    }>;
    const byId = new Map<string, (typeof rows)[number][]>();
    for (const r of rows) byId.set(r.msg_id, [...(byId.get(r.msg_id) ?? []), r]);
    // Every accepted message exactly once, and nothing else; none lost, none ended as error.
    expect(rows).toHaveLength(TOTAL);
    for (const id of accepted) {
      expect(byId.get(id)?.length, `msg ${id}`).toBe(1);
      const r = byId.get(id)![0]!;
      expect(['enviado', 'entregado', 'leido'], `msg ${id}: ${r.estado} ${r.error ?? ''}`).toContain(r.estado);
    }
    // Nothing sent twice: the network took each message once, under one gateway id.
    const sent = new Map(
      (db.prepare("SELECT key, value FROM kv WHERE ns = 'sim.sent'").all() as Array<{ key: string; value: string }>).map((r) => [
        r.key,
        (JSON.parse(r.value) as { gatewayMsgId: string }).gatewayMsgId,
      ]),
    );
    expect(sent.size).toBe(TOTAL);
    const gids = rows.map((r) => r.gateway_msg_id);
    expect(new Set(gids).size).toBe(TOTAL);
    for (const r of rows) expect(sent.get(r.msg_id), `gateway id of ${r.msg_id}`).toBe(r.gateway_msg_id);
    // Each message charged once, never refunded.
    const mov = db.prepare('SELECT COUNT(*) AS n, SUM(monto) AS total FROM movimientos_saldo WHERE celular_id IS NULL AND actor = ?').get('sistema') as {
      n: number;
      total: number;
    };
    expect(mov).toEqual({ n: TOTAL, total: -TOTAL });
    const cliente = db.prepare('SELECT saldo_global FROM clientes WHERE id = ?').get(cli.cliente.id) as { saldo_global: number };
    expect(cliente.saldo_global).toBe(SALDO - TOTAL);
  } finally {
    db.close();
  }
  expect(readdirSync(join(dataDir, 'tmp'))).toEqual([]);
}

describe('crash: SIGKILL while the queue drains', () => {
  it.each([
    ['~20%', 0.2],
    ['~70%', 0.7],
  ])(
    'killed after %s sent: every accepted message ends sent exactly once, charged once',
    async (_label, share) => {
      await runScenario(share);
    },
    180_000,
  );
});
