import Database from 'better-sqlite3';
import { join } from 'node:path';
import { readdirSync, rmSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import { authenticateClient } from '../../src/core/auth/auth.js';
import { REASON_NOT_SENT, REASON_UNKNOWN } from '../../src/core/sending/direct-recovery.js';
import { IDEM_TTL_MS } from '../../src/core/sending/idempotency.js';
import { TempFiles } from '../../src/core/media/media.js';
import { send as coreSend, type SendDeps, type SendRequest } from '../../src/core/sending/send.js';
import { LocalMedia } from '../../src/store/sqlite/media.js';
import { GatewayFailure, type Gateway } from '../../src/core/ports/gateway.js';
import type { SimGateway } from '../../src/gateways/sim.js';
import type { SqliteStore } from '../../src/store/sqlite/store.js';
import { expectError } from '../helpers/expect.js';
import { api, startTestServer, tempDir, type ApiResponse, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, redis, REDIS_URL, schemaUrl } from '../helpers/services.js';
import { pgSchema } from '../contract/adapters.js';
import { admin, b64, linkedLine, numeroNuevo, PNG, saldos, send, TEXT, uniqueText, type Line } from './send-helpers.js';
import { until } from '../helpers/poll.js';

/**
 * Idempotent sends (core/sending/idempotency.ts), over HTTP against the real server:
 * a repeated Idempotency-Key gets the first answer and sends, counts and
 * charges nothing; another request under the key is 409 api_codigo 607; a
 * repeat while a direct send is in flight is 409 api_codigo 608; refusals
 * before acceptance bind nothing; a direct send that provably never went out
 * frees its key, every other outcome keeps it; 24 h on the injected clock
 * free it too; the binding survives a restart; and the same on PostgreSQL.
 * Also the permanent refusal's own answer: 502 api_codigo 704.
 */

const IMAGE_B64 = '/api/mensaje_enviar_imagen_base64.php';
const LEGACY = '/panel/api_wa.php';

let s: TestServer;
const clock = () => s.clock as ManualClock;
const sim = () => s.core.gateway as SimGateway;

beforeAll(async () => {
  s = await startTestServer({ clock: new ManualClock(Date.now()), queue: { gapMinMs: 0, gapMaxMs: 0 }, simDeliveryMs: 20, simReadMs: 40 });
});
afterAll(async () => {
  await s?.stop();
});
afterEach(() => {
  sim().setOutage(false);
  sim().rateLimitNext(0);
});

/** A send with an Idempotency-Key header (JSON body, the celular key). */
function keyed(srv: TestServer, line: Line, path: string, key: string, body: Record<string, unknown>): Promise<ApiResponse> {
  return api(srv.url, 'POST', path, { key: line.celularKey, json: body, headers: { 'idempotency-key': key } });
}

const newKey = () => `clave-${Math.random().toString(36).slice(2)}`;

async function historial(srv: TestServer, line: Line): Promise<Array<{ msg_id: string; estado: string }>> {
  const h = await api(srv.url, 'GET', '/api/historial_listar.php?por_pagina=100', { key: line.clientKey });
  expect(h.status, h.text).toBe(200);
  return h.body.mensajes;
}

/** The same answer given again: same status and body, marked as a replay. */
function expectReplay(r: ApiResponse, first: ApiResponse): void {
  expect(r.status, r.text).toBe(first.status);
  expect(r.text).toBe(first.text);
  expect(r.headers.get('idempotent-replayed')).toBe('true');
}

function expectFresh(r: ApiResponse, status = 200): void {
  expect(r.status, r.text).toBe(status);
  expect(r.headers.get('idempotent-replayed')).toBeNull();
}

/** The gateway's sends wait for `open()` (a direct send stays in flight until then). */
function holdSends(gw: Gateway): { open(): void; restore(): void; waiting(): number } {
  const real = gw.send.bind(gw);
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let waiting = 0;
  gw.send = async (instancia, msg) => {
    waiting += 1;
    await gate;
    return real(instancia, msg);
  };
  return { open: () => release(), restore: () => (gw.send = real), waiting: () => waiting };
}

describe('a repeated key', () => {
  it('queued text: five repeats get the first answer; one message, one charge, and duplicate protection never sees them', async () => {
    const L = await linkedLine(s, { saldo: 10 });
    const body = { destinatario: numeroNuevo(), mensaje: uniqueText('idem') };
    const key = newKey();
    const first = await keyed(s, L, TEXT, key, body);
    expectFresh(first);
    expect(first.body).toMatchObject({ ok: true, modo: 'cola', estado: 'pendiente', anti_dupe: { count: 1 } });
    for (let i = 0; i < 5; i++) expectReplay(await keyed(s, L, TEXT, key, body), first);
    expect((await historial(s, L)).map((m) => m.msg_id)).toEqual([first.body.msg_id]);
    expect((await saldos(s, L)).global).toBe(9);
    // Six requests of one text within 120 s, but only the first counted: two more sends of it go.
    const second = await send(s, L, TEXT, body);
    expectFresh(second);
    expect(second.body.anti_dupe.count).toBe(2);
    expect((await send(s, L, TEXT, body)).body.anti_dupe.count).toBe(3);
  });

  it('direct text: the repeat answers the same gateway id; the network got one message', async () => {
    const L = await linkedLine(s, { saldo: 10 });
    const before = sim().sentCount;
    const body = { destinatario: numeroNuevo(), mensaje: uniqueText('directo'), directo: 1 };
    const key = newKey();
    const first = await keyed(s, L, TEXT, key, body);
    expectFresh(first);
    expect(first.body).toMatchObject({ modo: 'directo', estado: 'enviado', gateway_msg_id: expect.any(String) });
    expectReplay(await keyed(s, L, TEXT, key, body), first);
    expect(sim().sentCount - before).toBe(1);
    expect((await saldos(s, L)).global).toBe(9);
  });

  it('the same request in another form is a repeat: a number written differently, a client key naming the line, the body field', async () => {
    const L = await linkedLine(s, { saldo: 10 });
    const numero = numeroNuevo();
    const key = newKey();
    const mensaje = uniqueText();
    const first = await keyed(s, L, TEXT, key, { destinatario: numero, mensaje });
    expectFresh(first);
    const spaced = `+${numero.slice(0, 2)} ${numero.slice(2, 4)} ${numero.slice(4)}`;
    expectReplay(await keyed(s, L, TEXT, key, { destinatario: spaced, mensaje }), first);
    const withClientKey = await api(s.url, 'POST', TEXT, {
      key: L.clientKey,
      json: { destinatario: numero, mensaje, celular_id: L.celularId },
      headers: { 'idempotency-key': key },
    });
    expectReplay(withClientKey, first);
    const form = await send(s, L, TEXT, { destinatario: numero, mensaje, idempotency_key: key }, { form: true });
    expectReplay(form, first);
    const both = await api(s.url, 'POST', TEXT, {
      key: L.celularKey,
      form: { destinatario: numero, mensaje, idempotency_key: key },
      headers: { 'idempotency-key': key },
    });
    expectReplay(both, first);
    expect(await historial(s, L)).toHaveLength(1);
  });

  it('base64 media: the same bytes (data URI or raw) are a repeat, and no staged file is left', async () => {
    const L = await linkedLine(s, { saldo: 10 });
    const key = newKey();
    const destinatario = numeroNuevo();
    const first = await keyed(s, L, IMAGE_B64, key, { destinatario, imageBase64: b64(PNG), caption: 'foto' });
    expectFresh(first);
    expect(first.body.origen).toBe('base64_inline');
    expectReplay(await keyed(s, L, IMAGE_B64, key, { destinatario, imageBase64: `data:image/png;base64,${b64(PNG)}`, caption: 'foto' }), first);
    expect(await historial(s, L)).toHaveLength(1);
    const tmp = join(s.dataDir, 'tmp');
    await until(async () => (await historial(s, L))[0]!.estado !== 'pendiente', { what: 'the queued image to be sent' });
    await until(() => readdirSync(tmp).length === 0, { what: 'no staged or kept file' });
  });

  it('the legacy endpoint: the form field, and its alias path is the same endpoint', async () => {
    const L = await linkedLine(s, { saldo: 10 });
    const key = newKey();
    const form = { token: L.gatewayToken, destinatario: numeroNuevo(), mensaje: uniqueText('legacy'), idempotency_key: key };
    const first = await api(s.url, 'POST', LEGACY, { form });
    expectFresh(first);
    expectReplay(await api(s.url, 'POST', '/api/api-legacy.php', { form }), first);
    expect(await historial(s, L)).toHaveLength(1);
  });

  it('keys are per client: two clients may use one key', async () => {
    const A = await linkedLine(s, { saldo: 10 });
    const B = await linkedLine(s, { saldo: 10 });
    const key = newKey();
    const body = { destinatario: numeroNuevo(), mensaje: uniqueText() };
    const a = await keyed(s, A, TEXT, key, body);
    const b = await keyed(s, B, TEXT, key, body);
    expectFresh(a);
    expectFresh(b);
    expect(a.body.msg_id).not.toBe(b.body.msg_id);
  });
});

describe('the key with a different request', () => {
  it('409 api_codigo 607 for another text, recipient, mode, endpoint or line; nothing is sent', async () => {
    const L = await linkedLine(s, { saldo: 10 });
    const key = newKey();
    const body = { destinatario: numeroNuevo(), mensaje: uniqueText() };
    expectFresh(await keyed(s, L, TEXT, key, body));
    const others: Array<[string, Record<string, unknown>]> = [
      [TEXT, { ...body, mensaje: `${body.mensaje}!` }],
      [TEXT, { ...body, destinatario: numeroNuevo() }],
      [TEXT, { ...body, directo: 1 }],
      [TEXT, { ...body, preview_url: 1 }],
      [IMAGE_B64, { destinatario: body.destinatario, imageBase64: b64(PNG) }],
    ];
    for (const [path, other] of others) {
      const r = await keyed(s, L, path, key, other);
      expectError(r, 409, 607);
      expect(r.body.api_texto).toBe('IDEMPOTENCIA_CONFLICTO');
      expect(r.body.error).toMatch(/different request/);
    }
    // The legacy endpoint is another endpoint, even for the same text.
    const legacy = await api(s.url, 'POST', LEGACY, {
      form: { token: L.gatewayToken, destinatario: body.destinatario, mensaje: body.mensaje, idempotency_key: key },
    });
    expectError(legacy, 409, 607);
    expect(await historial(s, L)).toHaveLength(1);
    expect((await saldos(s, L)).global).toBe(9);
  });
});

describe('key values', () => {
  it('400 naming the field: empty, too long, not printable ASCII, spaces at an end, header and field that differ', async () => {
    const L = await linkedLine(s, { saldo: 10 });
    const body = { destinatario: numeroNuevo(), mensaje: uniqueText() };
    for (const bad of ['', 'x'.repeat(256), 'clé', 'tab\there', ' lead', 'trail ']) {
      const r = await send(s, L, TEXT, { ...body, idempotency_key: bad });
      expectError(r, 400, 100);
      expect(r.body.error).toMatch(/idempotency_key/);
    }
    const long = await keyed(s, L, TEXT, 'x'.repeat(256), body);
    expectError(long, 400, 100);
    expect(long.body.error).toMatch(/idempotency-key/i);
    // A streamed base64 body refused for its key leaves no staged file.
    const media = await keyed(s, L, IMAGE_B64, 'x'.repeat(300), { destinatario: body.destinatario, imageBase64: b64(PNG) });
    expectError(media, 400, 100);
    expect(readdirSync(join(s.dataDir, 'tmp'))).toEqual([]);
    const differ = await api(s.url, 'POST', TEXT, { key: L.celularKey, json: { ...body, idempotency_key: 'uno' }, headers: { 'idempotency-key': 'dos' } });
    expectError(differ, 400, 100);
    expect(differ.body.error).toMatch(/Idempotency-Key header and the idempotency_key field differ/);
    expect(await historial(s, L)).toHaveLength(0);
    // The edges that are fine: one character, 255, printable punctuation and inner spaces.
    for (const good of ['a', 'k'.repeat(255), 'order #42 / retry=1 {x}~']) expectFresh(await keyed(s, L, TEXT, good, { ...body, mensaje: uniqueText() }));
  });
});

describe('refusals bind nothing', () => {
  it('a 402 before acceptance: the same key sends once there is credit', async () => {
    const L = await linkedLine(s, { saldo: 0 });
    const key = newKey();
    const body = { destinatario: numeroNuevo(), mensaje: uniqueText() };
    expectError(await keyed(s, L, TEXT, key, body), 402, 300);
    expectError(await keyed(s, L, TEXT, key, body), 402, 300);
    await admin(s, 'POST', '/admin/saldo', { cliente_id: L.clienteId, monto: 1 });
    const r = await keyed(s, L, TEXT, key, body);
    expectFresh(r);
    expectReplay(await keyed(s, L, TEXT, key, body), r);
  });

  it('a direct send refused as rate-limited, or with the gateway unreachable: refunded, the key free, the retry sends once', async () => {
    const L = await linkedLine(s, { saldo: 5 });
    for (const [trip, status, codigo] of [
      [() => sim().rateLimitNext(1), 429, 702],
      [() => sim().setOutage(true), 502, 700],
    ] as const) {
      const key = newKey();
      const body = { destinatario: numeroNuevo(), mensaje: uniqueText(), directo: 1 };
      trip();
      const refused = await keyed(s, L, TEXT, key, body);
      expectError(refused, status, codigo);
      sim().setOutage(false);
      const retry = await keyed(s, L, TEXT, key, body);
      expectFresh(retry);
      expect(retry.body).toMatchObject({ modo: 'directo', estado: 'enviado' });
      expectReplay(await keyed(s, L, TEXT, key, body), retry);
    }
    // Each refused attempt is in the history as an error (refunded); each retry was one message.
    const h = await historial(s, L);
    expect(h.filter((m) => m.estado === 'error')).toHaveLength(2);
    expect(h.filter((m) => m.estado !== 'error')).toHaveLength(2);
    expect((await saldos(s, L)).global).toBe(3);
  });
});

describe('retries of what never went out are not duplicates', () => {
  it('the same keyed direct text four times while the gateway is unreachable: four 502s, never 306, and the line still sends', async () => {
    const L = await linkedLine(s, { saldo: 10 });
    const key = newKey();
    const body = { destinatario: numeroNuevo(), mensaje: uniqueText(), directo: 1 };
    sim().setOutage(true);
    try {
      for (let i = 0; i < 4; i++) expectError(await keyed(s, L, TEXT, key, body), 502, 700);
      // Unkeyed too: a send that provably never went out gives its duplicate count back.
      for (let i = 0; i < 4; i++) expectError(await send(s, L, TEXT, body), 502, 700);
    } finally {
      sim().setOutage(false);
    }
    const ok = await keyed(s, L, TEXT, key, body);
    expectFresh(ok);
    expect(ok.body).toMatchObject({ estado: 'enviado', anti_dupe: { count: 1 } });
  });

  it('a number refused for good, sent again and again: 502/704 each time, never 306; another message passes', async () => {
    const L = await linkedLine(s, { saldo: 10 });
    const dead = numeroNuevo();
    await admin(s, 'POST', '/admin/sim/fail', { numero: dead });
    const body = { destinatario: dead, mensaje: uniqueText(), directo: 1 };
    for (let i = 0; i < 5; i++) expectError(await send(s, L, TEXT, body), 502, 704);
    expectFresh(await send(s, L, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText(), directo: 1 }));
  });
});

describe('a direct send that may have gone, or will be refused again, keeps its key', () => {
  it('refused for good: 502 api_codigo 704, refunded; the repeat gets the same 502/704 and nothing reaches the gateway', async () => {
    const L = await linkedLine(s, { saldo: 5 });
    const dead = numeroNuevo();
    expect((await admin(s, 'POST', '/admin/sim/fail', { numero: dead, motivo: 'no existe en la red' })).status).toBe(200);
    const key = newKey();
    const body = { destinatario: dead, mensaje: uniqueText(), directo: 1 };
    const first = await keyed(s, L, TEXT, key, body);
    expectError(first, 502, 704);
    expect(first.body).toMatchObject({ api_texto: 'DESTINATARIO_RECHAZADO', saldo: 0 });
    expect(first.body.error).toMatch(/no existe en la red.*refunded.*fail again/);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    // Even once the number would be taken, the key keeps its answer.
    expect((await admin(s, 'POST', '/admin/sim/fail', { numero: dead, activo: false })).status).toBe(200);
    expectReplay(await keyed(s, L, TEXT, key, body), first);
    expect(await historial(s, L)).toHaveLength(1);
    expect((await saldos(s, L)).global).toBe(5);
  });

  it('a transient failure after the call may have reached the network (no answer in time): 502 api_codigo 705 kept, refunded, the repeat sends nothing', async () => {
    const L = await linkedLine(s, { saldo: 5 });
    const gw = s.core.gateway;
    const real = gw.send.bind(gw);
    gw.send = async () => {
      throw new GatewayFailure('sim gateway no answer within 60000 ms', 'transient', undefined, true);
    };
    try {
      const key = newKey();
      const body = { destinatario: numeroNuevo(), mensaje: uniqueText(), directo: 1 };
      const first = await keyed(s, L, TEXT, key, body);
      expectError(first, 502, 705);
      expect(first.body).toMatchObject({ api_texto: 'RESULTADO_INCIERTO' });
      expect((await saldos(s, L)).global).toBe(5);
      expect(first.body.error).toMatch(/outcome of the send is unknown, it may have been delivered: sim gateway no answer/);
      gw.send = real;
      expectReplay(await keyed(s, L, TEXT, key, body), first);
      const h = await historial(s, L);
      expect(h).toHaveLength(1);
      expect(h[0]).toMatchObject({ estado: 'error', error: 'sim gateway no answer within 60000 ms' });
      expect(first.body.error).toContain(h[0]!.msg_id);
    } finally {
      gw.send = real;
    }
  });
});

describe('two requests with one key at once', () => {
  it('queued: exactly one message; both answered 200 with it', async () => {
    const L = await linkedLine(s, { saldo: 10 });
    const key = newKey();
    const body = { destinatario: numeroNuevo(), mensaje: uniqueText() };
    const [a, b] = await Promise.all([keyed(s, L, TEXT, key, body), keyed(s, L, TEXT, key, body)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.msg_id).toBe(b.body.msg_id);
    expect([a, b].filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(1);
    expect(await historial(s, L)).toHaveLength(1);
    expect((await saldos(s, L)).global).toBe(9);
  });

  it('concurrent repeats never count for duplicate protection: a text sent twice, then five keyed copies started together, sends a third and blocks nothing', async () => {
    const L = await linkedLine(s, { saldo: 10 });
    const body = { destinatario: numeroNuevo(), mensaje: uniqueText('casi duplicado') };
    for (let i = 0; i < 2; i++) expectFresh(await send(s, L, TEXT, body));
    // Started in one tick, in process, so all five reach the key's look-up before the first acceptance commits.
    const p = await authenticateClient(s.core, [L.celularKey], '127.0.0.1');
    const tmp = new TempFiles(join(s.dataDir, 'tmp'));
    const deps: SendDeps = { tmp, media: new LocalMedia(tmp), queued: () => {}, inFlight: new Set(), keysAccepting: new Map() };
    const req: SendRequest = { tipo: 'texto', destinatario: body.destinatario, directo: false, texto: body.mensaje, idem: { clave: newKey(), endpoint: TEXT } };
    const all = await Promise.all(Array.from({ length: 5 }, () => coreSend(s.core, deps, p, req, (r) => ({ ...r }))));
    expect(all.map((a) => [a.status, a.replayed])).toEqual([[200, false], ...Array(4).fill([200, true])]);
    expect(new Set(all.map((a) => a.body.msg_id)).size).toBe(1);
    expect(all.map((a) => (a.body.anti_dupe as { count: number }).count)).toEqual([3, 3, 3, 3, 3]);
    expectFresh(await send(s, L, TEXT, { ...body, mensaje: uniqueText() }));
    expect(await historial(s, L)).toHaveLength(4);
  });

  it('direct: the second, while the first is in flight, gets 409 api_codigo 608 with retry_after 1; then the first answer', async () => {
    const L = await linkedLine(s, { saldo: 10 });
    const before = sim().sentCount;
    const key = newKey();
    const body = { destinatario: numeroNuevo(), mensaje: uniqueText(), directo: 1 };
    const hold = holdSends(s.core.gateway);
    try {
      const firstP = keyed(s, L, TEXT, key, body);
      await until(() => hold.waiting() === 1, { what: 'the first send to reach the gateway' });
      const second = await keyed(s, L, TEXT, key, body);
      expectError(second, 409, 608);
      expect(second.body).toMatchObject({ api_texto: 'IDEMPOTENCIA_EN_CURSO', retry_after: 1 });
      expect(second.headers.get('retry-after')).toBe('1');
      hold.open();
      const first = await firstP;
      expectFresh(first);
      expectReplay(await keyed(s, L, TEXT, key, body), first);
    } finally {
      hold.restore();
    }
    expect(sim().sentCount - before).toBe(1);
    expect(await historial(s, L)).toHaveLength(1);
  });

  it('direct, fired together many times: one message reaches the network', async () => {
    const L = await linkedLine(s, { saldo: 10 });
    const before = sim().sentCount;
    const key = newKey();
    const body = { destinatario: numeroNuevo(), mensaje: uniqueText(), directo: 1 };
    const all = await Promise.all(Array.from({ length: 6 }, () => keyed(s, L, TEXT, key, body)));
    for (const r of all) expect([200, 409], r.text).toContain(r.status);
    const ok = all.filter((r) => r.status === 200);
    expect(new Set(ok.map((r) => r.body.msg_id)).size).toBe(1);
    for (const r of all.filter((x) => x.status === 409)) expect(r.body.api_codigo).toBe(608);
    expect(sim().sentCount - before).toBe(1);
    expect(await historial(s, L)).toHaveLength(1);
  });
});

describe('expiry', () => {
  it('24 h after it was bound the key is free: the same request sends anew; expired keys are removed', async () => {
    const L = await linkedLine(s, { saldo: 10 });
    const key = newKey();
    const body = { destinatario: numeroNuevo(), mensaje: uniqueText() };
    const first = await keyed(s, L, TEXT, key, body);
    expectFresh(first);
    clock().advance(IDEM_TTL_MS - 1);
    expectReplay(await keyed(s, L, TEXT, key, body), first);
    clock().advance(1);
    const again = await keyed(s, L, TEXT, key, body);
    expectFresh(again);
    expect(again.body.msg_id).not.toBe(first.body.msg_id);
    expectReplay(await keyed(s, L, TEXT, key, body), again);
    // Older keys of every client go as new ones are bound.
    const old = newKey();
    expectFresh(await keyed(s, L, TEXT, old, { ...body, mensaje: uniqueText() }));
    clock().advance(IDEM_TTL_MS + 1);
    const db = (s.core.store as SqliteStore).db;
    const count = () => (db.prepare('SELECT COUNT(*) AS n FROM idempotencia WHERE expira_at <= ?').get(s.clock.now()) as { n: number }).n;
    expect(count()).toBeGreaterThan(0);
    for (let i = 0; i < 30 && count() > 0; i++) expectFresh(await keyed(s, L, TEXT, newKey(), { ...body, mensaje: uniqueText() }));
    expect(count()).toBe(0);
  });
});

describe("an answer lost mid-send (a crash, a failed write) is the message's", () => {
  it('a sent direct send whose answer was not kept: the repeat answers as the first would have', async () => {
    const L = await linkedLine(s, { saldo: 10 });
    const key = newKey();
    const body = { destinatario: numeroNuevo(), mensaje: uniqueText(), directo: 1 };
    const first = await keyed(s, L, TEXT, key, body);
    expectFresh(first);
    const db = (s.core.store as SqliteStore).db;
    // What a crash between the send's record and its answer's leaves: the part known at acceptance, no status.
    const part = JSON.stringify({ msg_id: first.body.msg_id, anti_dupe: first.body.anti_dupe, saldo: first.body.saldo });
    db.prepare('UPDATE idempotencia SET status = NULL, body = ? WHERE cliente_id = ? AND clave = ?').run(part, L.clienteId, key);
    expectReplay(await keyed(s, L, TEXT, key, body), first);
  });

  it.each([
    ['outcome unknown (a crash mid-send)', REASON_UNKNOWN, 'incierto', 502, 705],
    ['stopped before the network', REASON_NOT_SENT, 'no_enviado', 502, 700],
    ['refused for good', 'refused for good: 5215500000001 is not on WhatsApp', 'rechazado', 502, 704],
    // The class decides, never the wording.
    ['unknown, whatever its text says', 'refused for good? not sent? who knows', 'incierto', 502, 705],
    ['refused for good in other words', 'el número no existe', 'rechazado', 502, 704],
  ] as const)(
    'one that ended in error with no answer kept stays bound: %s is answered %s/%s naming it, nothing sent again',
    async (_what, reason, clase, status, codigo) => {
      const L = await linkedLine(s, { saldo: 10 });
      const key = newKey();
      const body = { destinatario: numeroNuevo(), mensaje: uniqueText(), directo: 1 };
      const first = await keyed(s, L, TEXT, key, body);
      const db = (s.core.store as SqliteStore).db;
      db.prepare('UPDATE idempotencia SET status = NULL, body = ? WHERE cliente_id = ? AND clave = ?').run(
        JSON.stringify({ msg_id: first.body.msg_id, anti_dupe: first.body.anti_dupe, saldo: first.body.saldo }),
        L.clienteId,
        key,
      );
      db.prepare("UPDATE mensajes SET estado = 'error', enviado_at = NULL, error = ?, error_clase = ? WHERE msg_id = ?").run(reason, clase, first.body.msg_id);
      const r = await keyed(s, L, TEXT, key, body);
      expectError(r, status, codigo);
      expect(r.body.error).toContain(first.body.msg_id);
      expect(r.body.error).toContain(reason);
      expect(r.headers.get('idempotent-replayed')).toBe('true');
      expect(await historial(s, L)).toHaveLength(1);
    },
  );

  it('a direct send refused for good records it in its reason, so a lost answer is rebuilt as the same 502/704', async () => {
    const L = await linkedLine(s, { saldo: 5 });
    const dead = numeroNuevo();
    expect((await admin(s, 'POST', '/admin/sim/fail', { numero: dead, motivo: 'no existe en la red' })).status).toBe(200);
    const key = newKey();
    const body = { destinatario: dead, mensaje: uniqueText(), directo: 1 };
    expectError(await keyed(s, L, TEXT, key, body), 502, 704);
    const [m] = await historial(s, L);
    expect(m).toMatchObject({ estado: 'error', error: 'refused for good: no existe en la red', error_clase: 'rechazado' });
    (s.core.store as SqliteStore).db.prepare('UPDATE idempotencia SET status = NULL WHERE cliente_id = ? AND clave = ?').run(L.clienteId, key);
    const r = await keyed(s, L, TEXT, key, body);
    expectError(r, 502, 704);
    expect(r.body.error).toMatch(/refused for good: no existe en la red.*fail again/);
    expect(await historial(s, L)).toHaveLength(1);
  });
});

describe('durable', () => {
  it('a key bound before a restart answers the same after it, on the same data directory', async () => {
    const dataDir = tempDir();
    const c = new ManualClock(Date.now());
    let a: TestServer | undefined = await startTestServer({ dataDir, clock: c, queue: { gapMinMs: 0, gapMaxMs: 0 } });
    try {
      const L = await linkedLine(a, { saldo: 10 });
      const qKey = newKey();
      const dKey = newKey();
      const qBody = { destinatario: numeroNuevo(), mensaje: uniqueText() };
      const dBody = { destinatario: numeroNuevo(), mensaje: uniqueText(), directo: 1 };
      const queued = await keyed(a, L, TEXT, qKey, qBody);
      const direct = await keyed(a, L, TEXT, dKey, dBody);
      expectFresh(queued);
      expectFresh(direct);
      await a.close();
      a = await startTestServer({ dataDir, clock: c, queue: { gapMinMs: 0, gapMaxMs: 0 } });
      expectReplay(await keyed(a, L, TEXT, qKey, qBody), queued);
      expectReplay(await keyed(a, L, TEXT, dKey, dBody), direct);
      expect(await historial(a, L)).toHaveLength(2);
    } finally {
      await a?.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('the binding commits with the message: a key row for every keyed message, none for a refusal', async () => {
    const L = await linkedLine(s, { saldo: 1 });
    const ok = await keyed(s, L, TEXT, newKey(), { destinatario: numeroNuevo(), mensaje: uniqueText() });
    expectFresh(ok);
    expectError(await keyed(s, L, TEXT, newKey(), { destinatario: numeroNuevo(), mensaje: uniqueText() }), 402, 300);
    const db = new Database(join(s.dataDir, 'pasarela.db'), { readonly: true });
    try {
      const rows = db.prepare('SELECT msg_id, status FROM idempotencia WHERE cliente_id = ?').all(L.clienteId);
      expect(rows).toEqual([{ msg_id: ok.body.msg_id, status: 200 }]);
    } finally {
      db.close();
    }
  });
});

// ---- PostgreSQL ----
const pgServers: TestServer[] = [];
const drops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const x of pgServers) await x.stop().catch(() => undefined);
  for (const d of drops) await d();
});

async function storeUrl(): Promise<string> {
  const sch = await pgSchema();
  drops.push(sch.drop);
  const u = new URL(schemaUrl(sch.schema));
  return u.toString();
}

describeWith(postgres, 'idempotent sends on PostgreSQL', () => {
  it.skipIf(!redis.available)('two nodes sharing Redis counters: a key raced on both never counts for duplicate protection', async () => {
    const url = await storeUrl();
    const prefix = `pasarela-test-idem-${process.pid}-${Date.now()}:`;
    const opts = { store: url, counters: REDIS_URL, countersPrefix: prefix, queue: { gapMinMs: 0, gapMaxMs: 0 } };
    const a = await startTestServer(opts);
    pgServers.push(a);
    const b = await startTestServer({ ...opts, dataDir: tempDir() });
    pgServers.push(b);
    const L = await linkedLine(a, { saldo: 50 });
    for (let round = 0; round < 3; round++) {
      const body = { destinatario: numeroNuevo(), mensaje: uniqueText() };
      // Two identical sends count 2 of 3; then one key, raced on both nodes, is one more send at most.
      for (let i = 0; i < 2; i++) expectFresh(await send(a, L, TEXT, body));
      const k = newKey();
      const all = await Promise.all([a, b, a, b, b, a].map((srv) => keyed(srv, L, TEXT, k, body)));
      for (const r of all) expect([200, 409], r.text).toContain(r.status);
      expect(all.filter((r) => r.status === 409).every((r) => r.body.api_codigo === 608)).toBe(true);
      expect(new Set(all.filter((r) => r.status === 200).map((r) => r.body.msg_id)).size).toBe(1);
      // The line is not blocked: another message passes.
      expectFresh(await send(b, L, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText() }));
    }
  });

  it('repeat, conflict, two nodes racing one key, a restart, expiry', async () => {
    const url = await storeUrl();
    const c = new ManualClock(Date.now());
    const a = await startTestServer({ store: url, clock: c, queue: { gapMinMs: 0, gapMaxMs: 0 } });
    pgServers.push(a);
    const b = await startTestServer({ store: url, dataDir: tempDir(), clock: c, queue: { gapMinMs: 0, gapMaxMs: 0 } });
    pgServers.push(b);
    const L = await linkedLine(a, { saldo: 20 });
    const key = newKey();
    const body = { destinatario: numeroNuevo(), mensaje: uniqueText() };
    const first = await keyed(a, L, TEXT, key, body);
    expectFresh(first);
    expectReplay(await keyed(b, L, TEXT, key, body), first);
    expectError(await keyed(b, L, TEXT, key, { ...body, mensaje: 'otro' }), 409, 607);

    // The same key on both nodes at once, queued and direct: one message each.
    for (const directo of [0, 1]) {
      const k = newKey();
      const x = { destinatario: numeroNuevo(), mensaje: uniqueText(), directo };
      const all = await Promise.all([a, b, a, b].map((srv) => keyed(srv, L, TEXT, k, x)));
      const ok = all.filter((r) => r.status === 200);
      expect(ok.length).toBeGreaterThan(0);
      expect(new Set(ok.map((r) => r.body.msg_id)).size).toBe(1);
      for (const r of all.filter((y) => y.status !== 200)) expectError(r, 409, 608);
    }
    expect(await historial(a, L)).toHaveLength(3);
    expect((await saldos(a, L)).global).toBe(17);

    // A direct send refused for good keeps its 502/704 on every node.
    const dead = numeroNuevo();
    await admin(a, 'POST', '/admin/sim/fail', { numero: dead });
    const dk = newKey();
    const deadBody = { destinatario: dead, mensaje: uniqueText(), directo: 1 };
    const refused = await keyed(a, L, TEXT, dk, deadBody);
    expectError(refused, 502, 704);
    expectReplay(await keyed(b, L, TEXT, dk, deadBody), refused);

    // A node started again answers the same; 24 h later the key sends anew.
    await a.close();
    const a2 = await startTestServer({ store: url, dataDir: tempDir(), clock: c, queue: { gapMinMs: 0, gapMaxMs: 0 } });
    pgServers.push(a2);
    expectReplay(await keyed(a2, L, TEXT, key, body), first);
    c.advance(IDEM_TTL_MS);
    const again = await keyed(a2, L, TEXT, key, body);
    expectFresh(again);
    expect(again.body.msg_id).not.toBe(first.body.msg_id);
    expectReplay(await keyed(b, L, TEXT, key, body), again);
  });
});
