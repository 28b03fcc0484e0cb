import { expect } from 'vitest';
import { until } from '../helpers/poll.js';
import type { SimGateway } from '../../src/gateways/sim.js';
import { api, type ApiResponse, type TestServer } from '../helpers/server.js';
import { b64, PNG, send, waitEstado, type Line } from './send-helpers.js';
import type { Receiver } from './webhook-helpers.js';

/**
 * The walk over every read path the query-plans tests run (SQLite's
 * query-plans.test.ts, PostgreSQL's query-plans-postgres.test.ts), one for
 * both so they cannot drift apart: a request dropped from one would silently
 * drop its statements out of that store's plan checks.
 */
export interface WalkOptions {
  /** How long to wait for the sends to be read and for webhook copies (a store of 1,000,000 messages is slower). */
  waitMs: number;
}

/**
 * After the sends: waits for each of `sent` to be read and for the webhook
 * deliveries, then reads history pages, a message by id in each scope and its
 * story, the refused send's story, inbox pages, the audit trail, ledger pages
 * and export, consumption, a webhook listener's life and the event stream.
 * `a` has a webhook configured (at `receiver`/hooks); `b` has none.
 */
export async function walkReadPaths(s: TestServer, a: Line, b: Line, receiver: Receiver, sent: string[], { waitMs }: WalkOptions): Promise<void> {
  for (const id of sent) await waitEstado(s, id, 'leido', waitMs);
  // Webhook deliveries, their listing, a redelivery; history pages with each filter; account reads.
  await until(() => receiver.hits.length >= 10, { what: 'webhook deliveries', timeoutMs: waitMs });
  const list = await api(s.url, 'GET', '/api/webhook_entregas.php', { key: a.clientKey });
  await api(s.url, 'POST', `/api/webhook_reenviar.php?id=${list.body.entregas[0].id}`, { key: a.clientKey });
  for (const q of [
    '',
    '&estado=leido',
    '&estado=error',
    '&destinatario=525510001234',
    `&celular_id=${a.celularId}`,
    '&desde=2026-01-01&hasta=2026-12-31',
    `&celular_id=${a.celularId}&estado=error`,
    `&celular_id=${a.celularId}&destinatario=525510001234`,
    '&estado=error&desde=2026-01-01&hasta=2026-12-31',
  ]) {
    expect((await api(s.url, 'GET', `/api/historial_listar.php?page=2${q}`, { key: a.clientKey })).status).toBe(200);
  }
  await api(s.url, 'GET', '/api/historial_listar.php', { key: a.celularKey });
  // One message by id in each scope: the client's key, the line's key, another client's (404), an unknown id (404).
  // (A sibling line's key is refused after the same read.)
  for (const [key, id, status] of [
    [a.clientKey, sent[0]!, 200],
    [a.celularKey, sent[0]!, 200],
    [b.clientKey, sent[0]!, 404],
    [a.clientKey, '01a21b3d-2a89-7ea1-83be-22d9f67523ae', 404],
  ] as const) {
    expect((await api(s.url, 'GET', `/api/mensaje.php?msg_id=${id}`, { key })).status).toBe(status);
    // Its story too: its own row, its ledger rows and its deliveries, each by the message's id.
    expect((await api(s.url, 'GET', `/api/mensaje.php?msg_id=${id}&timeline=1`, { key })).status).toBe(status);
  }
  const refused = /msg_id ([0-9a-f-]{36})/.exec(
    (await send(s, a, '/api/mensaje_enviar_texto.php', { destinatario: '525598772222', mensaje: 'falla y se reembolsa', directo: 1 })).body.error,
  )![1]!;
  expect(
    (await api(s.url, 'GET', `/api/mensaje.php?msg_id=${refused}&timeline=1`, { key: a.clientKey })).body.timeline.map((t: { paso: string }) => t.paso),
  ).toContain('reembolso');
  // Inbox pages with each filter and combination, and the retention's purge.
  const de = '&remitente=525520000007';
  for (const q of [
    '',
    `&celular_id=${a.celularId}`,
    de,
    `&celular_id=${a.celularId}${de}`,
    '&desde=2026-01-01&hasta=2026-12-31',
    `&celular_id=${a.celularId}&desde=2026-01-01&hasta=2026-12-31`,
    `${de}&desde=2026-01-01&hasta=2026-12-31`,
    `&celular_id=${a.celularId}${de}&desde=2026-01-01`,
  ]) {
    expect((await api(s.url, 'GET', `/api/recibidos_listar.php?page=2${q}`, { key: a.clientKey })).status).toBe(200);
  }
  await api(s.url, 'GET', '/api/recibidos_listar.php', { key: a.celularKey });
  // The audit trail: a change of money writes its record; pages with each filter, both ways, and time bounds.
  await api(s.url, 'POST', '/admin/saldo', { key: s.adminToken, json: { cliente_id: b.clienteId, monto: 5 } });
  const cid = `&cliente_id=${a.clienteId}`;
  const acc = '&accion=saldo.cambiar';
  for (const q of ['', cid, acc, `${cid}${acc}`, '&desde=2026-01-01&hasta=2026-12-31', `${cid}${acc}&desde=2026-01-01T00:00:00Z`]) {
    for (const page of ['', '&antes=3', '&despues=0', '&despues=2']) {
      const r = await api(s.url, 'GET', `/admin/auditoria?limit=2${q}${page}`, { key: s.adminToken });
      expect(r.status, r.text).toBe(200);
    }
  }
  // The inbox's and the event log's retention passes.
  await s.inbox.run();
  await s.events.run();
  await api(s.url, 'GET', '/api/info.php', { key: a.clientKey });
  await api(s.url, 'GET', `/api/saldo.php?celular_id=${a.celularId}`, { key: a.clientKey });
  // The ledger's pages with each filter and combination, an export, and a month's consumption per line.
  for (const q of [
    '',
    '&tipo=cobro',
    '&tipo=reembolso',
    '&tipo=manual',
    `&celular_id=${a.celularId}`,
    `&celular_id=${a.celularId}&tipo=manual`,
    '&desde=2026-01-01&hasta=2026-12-31',
    `&celular_id=${a.celularId}&tipo=cobro&desde=2026-01-01`,
  ]) {
    expect((await api(s.url, 'GET', `/api/movimientos.php?page=2${q}`, { key: a.clientKey })).status).toBe(200);
  }
  await api(s.url, 'GET', '/api/movimientos.php', { key: a.celularKey });
  // PostgreSQL's choices for both stores: `b` reads the export and the stream (`a` holds half of PostgreSQL's million rows), a resumed stream is cut once started.
  expect((await api(s.url, 'GET', '/api/movimientos.php?format=csv', { key: b.clientKey })).status).toBe(200);
  expect((await api(s.url, 'GET', '/api/consumo.php', { key: a.clientKey })).status).toBe(200);
  await api(s.url, 'GET', `/api/celular.php?id=${a.celularId}`, { key: a.celularKey });
  // A webhook listener of a client without a configuration: registered, renewed, listed, given a test event and an incoming message, removed.
  const esc = await api(s.url, 'POST', '/api/webhook_escuchas.php', { key: b.clientKey, json: { url: `${receiver.url}/escucha` } });
  expect(esc.status, esc.text).toBe(201);
  await api(s.url, 'POST', `/api/webhook_escuchas_renovar.php?id=${esc.body.escucha.id}`, { key: b.clientKey });
  await api(s.url, 'GET', '/api/webhook_escuchas.php', { key: b.clientKey });
  await api(s.url, 'POST', '/api/webhook_test.php', { key: b.clientKey });
  await api(s.url, 'POST', '/admin/sim/receive', { key: s.adminToken, json: { celular_id: b.celularId, de: '525598773334', texto: 'hola escucha' } });
  await until(() => receiver.hits.some((h) => h.path === '/escucha' && h.headers['x-service-event'] === 'messages.received'), {
    what: 'a listener copy',
    timeoutMs: waitMs,
  });
  await api(s.url, 'DELETE', `/api/webhook_escuchas.php?id=${esc.body.escucha.id}`, { key: b.clientKey });
  // The event stream: from the log's start, resumed after an id (checked kept before the stream starts), and following from the newest.
  const stream = async (q: string, headers: Record<string, string> = {}) => {
    const r = await fetch(`${s.url}/api/eventos.php${q}`, { headers: { authorization: `Bearer ${b.clientKey}`, ...headers } });
    expect(r.status).toBe(200);
    return r;
  };
  const everything = await (await stream('?seguir=0')).text();
  const firstId = /^id: (\S+)$/m.exec(everything)![1]!;
  await (await stream('?seguir=0', { 'last-event-id': firstId })).body!.cancel();
  await (await stream('')).body!.cancel();
}

/** A text of the walk's sends, the i-th recipient. */
export const body = (i: number, extra: Record<string, unknown> = {}) => ({ destinatario: `52559877${String(1000 + i)}`, mensaje: `nuevo ${i}`, ...extra });

/** Every send path both plans tests run (the same requests on both stores); the ids of the messages accepted. */
export async function walkSendPaths(s: TestServer, a: Line, b: Line): Promise<string[]> {
  // Sends: queued and direct, a text and a base64 image, with the client key and the celular key, a duplicate, a refusal.
  const sent: string[] = [];
  const accepted = (r: ApiResponse) => {
    expect(r.status, r.text).toBe(200);
    sent.push(r.body.msg_id);
  };
  for (let i = 0; i < 3; i++) accepted(await send(s, a, '/api/mensaje_enviar_texto.php', body(i)));
  accepted(await send(s, a, '/api/mensaje_enviar_texto.php', body(10, { directo: 1 })));
  accepted(await send(s, a, '/api/mensaje_enviar_imagen_base64.php', { destinatario: '525598771111', imageBase64: b64(PNG), directo: 1 }));
  accepted(await send(s, a, '/api/mensaje_enviar_imagen_base64.php', { destinatario: '525598771112', imageBase64: b64(PNG) }));
  accepted(await api(s.url, 'POST', '/api/mensaje_enviar_texto.php', { key: b.clientKey, json: { ...body(20), celular_id: b.celularId } }));
  await send(s, a, '/api/mensaje_enviar_texto.php', body(0));
  await api(s.url, 'POST', '/api/mensaje_enviar_texto.php', { key: 'WA_999_nope', json: body(30) });
  // A pool (docs/pools.md): its pick reads the recipient's latest message (a known recipient and a new one).
  const pool = await api(s.url, 'POST', '/api/grupo_crear.php', { key: b.clientKey, json: { nombre: 'plan', celulares: [b.celularId], conmutacion_s: 60 } });
  expect(pool.status, pool.text).toBe(201);
  for (const json of [body(20, { mensaje: 'por el grupo' }), body(51)])
    accepted(await api(s.url, 'POST', '/api/mensaje_enviar_texto.php', { key: b.clientKey, json: { ...json, grupo: 'plan' } }));
  // The legacy endpoint with the gateway token.
  await api(s.url, 'POST', '/panel/api_wa.php', { form: { token: a.gatewayToken, destinatario: '525598771113', mensaje: 'legacy' } });
  // A permanent failure (refund), receipts to leido, a receipt before its send (parked), an incoming message.
  await api(s.url, 'POST', '/admin/sim/fail', { key: s.adminToken, json: { numero: '525598772222', motivo: 'not on the network' } });
  await send(s, a, '/api/mensaje_enviar_texto.php', { destinatario: '525598772222', mensaje: 'falla', directo: 1 });
  await s.core.store.receipt(b.celularId, 'NOT-YET-SENT', 'entregado', s.clock.now());
  // Idempotency-Keys: bound queued and direct, repeated, with another request, kept for a refusal, released after a failure that sent nothing.
  const keyed = (k: string, extra: Record<string, unknown>) =>
    api(s.url, 'POST', '/api/mensaje_enviar_texto.php', { key: a.celularKey, json: body(40, extra), headers: { 'idempotency-key': k } });
  accepted(await keyed('plan-cola', {}));
  accepted(await keyed('plan-directo', { directo: 1, mensaje: 'directo con clave' }));
  await keyed('plan-cola', {});
  await keyed('plan-cola', { mensaje: 'otro' });
  await keyed('plan-falla', { destinatario: '525598772222', directo: 1 });
  (s.core.gateway as SimGateway).setOutage(true);
  await keyed('plan-caido', { directo: 1, mensaje: 'caido' });
  (s.core.gateway as SimGateway).setOutage(false);
  await api(s.url, 'POST', '/admin/sim/receive', { key: s.adminToken, json: { celular_id: a.celularId, de: '525598773333', texto: 'hola' } });
  return sent;
}

/**
 * After the read walk: a metrics scrape with a message still queued (`b`'s line outside its hours: the store gauges'
 * statements), then the queue (issue 36): listed with why each waits, a page after a place, a message cancelled, the
 * line's queue cancelled, a cancelled one retried, `a`'s failed deliveries redelivered.
 */
export async function walkQueuePaths(s: TestServer, a: Line, b: Line): Promise<void> {
  const away = `${String((new Date().getHours() + 12) % 24).padStart(2, '0')}:00`;
  await api(s.url, 'POST', `/api/celular_editar.php?id=${b.celularId}`, { key: b.clientKey, json: { hora_inicio_permitido: away, hora_fin_permitido: away } });
  await api(s.url, 'POST', '/api/mensaje_enviar_texto.php', { key: b.clientKey, json: { ...body(50), celular_id: b.celularId } });
  const metrics = await api(s.url, 'GET', '/metrics', { key: s.adminToken });
  expect(metrics.status).toBe(200);
  expect(metrics.text).toMatch(/^pasarela_queue_pending [1-9]/m);
  await api(s.url, 'POST', '/api/mensaje_enviar_texto.php', { key: b.clientKey, json: { ...body(51), celular_id: b.celularId } });
  const queued = await api(s.url, 'GET', `/api/cola.php?celular_id=${b.celularId}&por_pagina=1`, { key: b.clientKey });
  expect(queued.body.total).toBe(2);
  await api(s.url, 'GET', `/api/cola.php?despues=${queued.body.siguiente}`, { key: b.clientKey });
  const one = queued.body.mensajes[0].msg_id as string;
  expect((await api(s.url, 'POST', '/api/cola_cancelar.php', { key: b.clientKey, json: { msg_ids: [one] } })).body.cancelados).toBe(1);
  expect((await api(s.url, 'POST', '/api/mensaje_reintentar.php', { key: b.clientKey, json: { msg_ids: [one] } })).body.reintentados).toBe(1);
  expect((await api(s.url, 'POST', '/api/cola_cancelar.php', { key: b.clientKey, json: { celular_id: b.celularId, todos: 1 } })).body.cancelados).toBe(2);
  expect((await api(s.url, 'POST', '/api/webhook_reenviar_fallidas.php', { key: a.clientKey, json: { limit: 5 } })).status).toBe(200);
}
