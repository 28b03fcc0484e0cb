import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import type { SimGateway } from '../../src/gateways/sim.js';
import type { LineBrakeEvent } from '../../src/core/events/events.js';
import { injectTransport } from '../helpers/inject-http.js';
import { until } from '../helpers/poll.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import type { ServeOptions } from '../../src/server/serve.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';
import { expectError, expectOk } from '../helpers/expect.js';
import { pgSchema } from '../contract/adapters.js';
import { Cli, expectJsonOnly } from '../cli/helpers.js';
import { openStream } from './eventos-helpers.js';
import { setWebhook, startReceiver, type Receiver } from './webhook-helpers.js';
import { admin, editCelular, linkedLine, mensaje, numeroNuevo, send, TEXT, uniqueText, waitEstado, type Line } from './send-helpers.js';

/**
 * A line's health and its brake (docs/brake.md, core/accounts/line-brake.ts):
 * sends refused for good crossing the threshold raise celular.frenado (bus,
 * stream, webhook); with the line's brake on its queue waits, its direct
 * sends are refused, and a resume (API, CLI, operator) lets it go on.
 */
const SENT = ['enviado', 'entregado', 'leido'];
const BRAKE = { minMensajes: 5, fallosPct: 30, rechazadosPct: 50, sinEntregarPct: 50 };
const opts = { tz: 'UTC', allowPrivateUrls: true, simDeliveryMs: 20, simReadMs: 40, queue: { gapMinMs: 0, gapMaxMs: 0 }, brake: BRAKE } as const;

const servers: TestServer[] = [];
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of closers) await c().catch(() => undefined);
  for (const s of servers) await s.stop().catch(() => undefined);
});

/** Five sends to numbers the network refuses for good, queued on the line; each ends as error. */
async function refusedFive(s: TestServer, L: Line): Promise<void> {
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    const dead = numeroNuevo();
    expect((await admin(s, 'POST', '/admin/sim/fail', { numero: dead, motivo: 'not on the network' })).status).toBe(200);
    const r = await send(s, L, TEXT, { destinatario: dead, mensaje: uniqueText('dead') });
    expectOk(r, { modo: 'cola' });
    ids.push(r.body.msg_id);
  }
  for (const id of ids) await waitEstado(s, id, 'error');
}

function scenario(name: string, start: (extra?: Partial<ServeOptions>) => Promise<TestServer>): void {
  let s: TestServer;
  let R: Receiver;
  const events: LineBrakeEvent[] = [];

  it(`${name}: refusals over the threshold brake a line with its brake on: celular.frenado on the bus, the stream and the webhook; the queue waits, direct sends refused; the API resumes it (celular.reanudado) and the queue goes on`, async () => {
    s = await start();
    servers.push(s);
    s.core.bus.subscribe('celular.frenado', (e) => events.push(e));
    R = await startReceiver();
    closers.push(() => R.close());
    const L = await linkedLine(s);
    expect((await editCelular(s, L, { freno: 1 })).body.celular).toMatchObject({ freno: true, frenado: false, frenado_motivo: null });
    expectOk(await setWebhook(s, L.clientKey, { url: R.url, eventos: ['celular.frenado', 'celular.reanudado'] }));
    const stream = await openStream(s.url, '/api/eventos.php?eventos=celular.frenado,celular.reanudado', L.clientKey);
    closers.push(async () => stream.close());

    await refusedFive(s, L);
    await until(async () => (await s.core.store.getCelular(L.celularId))?.frenado === 1, { what: 'the line braked' });
    const good = [];
    for (let i = 0; i < 2; i++) good.push((await send(s, L, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('good') })).body.msg_id as string);
    await s.stepQueue();
    await s.stepQueue();
    for (const id of good) expect((await mensaje(s, id)).estado, id).toBe('pendiente');

    const [ev] = await stream.waitEvents(1);
    expect(ev!.event).toBe('celular.frenado');
    const data = JSON.parse(ev!.data);
    expect(data).toMatchObject({ evento: 'celular.frenado', celular_id: L.celularId, data: { frenado: true, causa: 'rechazados', rechazados: 5, salidos: 5 } });
    const hit = await R.wait((h) => h.json?.evento === 'celular.frenado', 10_000, 'the celular.frenado webhook');
    expect(hit.json.data).toMatchObject({ frenado: true, causa: 'rechazados', numero: L.numero });
    expect(events.filter((e) => e.celular_id === L.celularId)).toHaveLength(1);
    // The operator's log says it too: a warning naming the line, its client and the reason (never a number).
    const logged = (event: string) =>
      s.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.event === event && l.celular_id === L.celularId);
    expect(logged('line.braked')).toEqual([
      expect.objectContaining({
        level: 40,
        msg: 'line braked',
        cliente_id: L.clienteId,
        braked: true,
        causa: 'rechazados',
        reason: expect.stringMatching(/5 of 5/),
      }),
    ]);

    const line = await api(s.url, 'GET', `/api/celular.php?id=${L.celularId}`, { key: L.clientKey });
    expect(line.body.celular).toMatchObject({ frenado: true, frenado_motivo: expect.stringMatching(/refused for good.*5 of 5/) });
    const cola = await api(s.url, 'GET', `/api/cola.php?celular_id=${L.celularId}`, { key: L.clientKey });
    expect(cola.body.mensajes.map((m: { motivo: string }) => m.motivo)).toEqual(['frenado', 'en_turno']);
    expectError(await send(s, L, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('direct'), directo: 1 }), 403, 639);
    // For a script, a braked line is "refused now" (exit 9, as a line not active), not bad credentials.
    const cli = new Cli(s.url, injectTransport(s.app));
    closers.push(async () => cli.cleanup());
    const direct = await cli.run(['send', 'text', numeroNuevo(), uniqueText('cli'), '--directo'], { env: { PASARELA_KEY: L.celularKey } });
    expect(direct.exitCode, direct.stderr).toBe(9);
    expect(direct.stderr).toMatch(/braked/);

    const resumed = await api(s.url, 'POST', `/api/celular_reanudar.php?id=${L.celularId}`, { key: L.clientKey });
    expectOk(resumed);
    expect(resumed.body).toMatchObject({ reanudado: true, motivo_anterior: expect.stringMatching(/refused for good/), celular: { frenado: false } });
    for (const id of good) await waitEstado(s, id, SENT);
    const [, back] = await stream.waitEvents(2);
    expect(back!.event).toBe('celular.reanudado');
    expect(JSON.parse(back!.data).data).toMatchObject({ celular_id: L.celularId, por: `cliente:${L.clienteId}` });
    await R.wait((h) => h.json?.evento === 'celular.reanudado', 10_000, 'the celular.reanudado webhook');
    expect(logged('line.resumed')).toEqual([expect.objectContaining({ level: 30, msg: 'line resumed', by: `cliente:${L.clienteId}` })]);
    // The brake and the resume are in the audit trail, each with who did it.
    const trail = async (accion: string) =>
      (await api(s.url, 'GET', `/admin/auditoria?cliente_id=${L.clienteId}&accion=${accion}`, { key: s.adminToken })).body.registros as unknown[];
    expect(await trail('celular.frenar')).toEqual([
      expect.objectContaining({ actor: 'sistema', objeto_id: L.celularId, detalle: expect.objectContaining({ causa: 'rechazados' }) }),
    ]);
    expect(await trail('celular.reanudar')).toEqual([
      expect.objectContaining({
        actor: `cliente:${L.clienteId}`,
        objeto_id: L.celularId,
        detalle: { motivo_anterior: expect.stringMatching(/refused for good/) },
      }),
    ]);
    // The window starts again: the line is not braked again at once by the failures before the resume.
    await s.stepQueue();
    expect((await s.core.store.getCelular(L.celularId))!.frenado).toBe(0);
  });

  it(`${name}: braked again an hour later, the CLI resumes it (the client key), and the operator may resume any line; bad ids 404, another client's line 404`, async () => {
    const L = await linkedLine(s);
    await editCelular(s, L, { freno: 1 });
    (s.clock as ManualClock).advance(2 * 3_600_000);
    await refusedFive(s, L);
    await until(async () => (await s.core.store.getCelular(L.celularId))?.frenado === 1, { what: 'the line braked' });
    const cli = new Cli(s.url, injectTransport(s.app));
    closers.push(async () => cli.cleanup());
    const out = expectJsonOnly(await cli.run(['celular', 'resume', String(L.celularId), '--json'], { env: { PASARELA_KEY: L.clientKey } }));
    expect(out).toMatchObject({ ok: true, celular_id: L.celularId, reanudado: true });
    const words = await cli.run(['celular', 'reanudar', String(L.celularId)], { env: { PASARELA_KEY: L.celularKey } });
    expect(words.exitCode, words.stderr).toBe(0);
    expect(words.stderr).toContain(`Celular ${L.celularId} was not braked`);

    const op = await api(s.url, 'POST', `/admin/celulares/${L.celularId}/reanudar`, { key: s.adminToken });
    expectOk(op);
    expect(op.body.reanudado).toBe(false);
    const other = await linkedLine(s);
    expectError(await api(s.url, 'POST', `/api/celular_reanudar.php?id=${L.celularId}`, { key: other.clientKey }), 404, 600);
    expectError(await api(s.url, 'POST', `/api/celular_reanudar.php?id=${L.celularId}`, { key: other.celularKey }), 404, 600);
    expectError(await api(s.url, 'POST', '/api/celular_reanudar.php?id=99999999', { key: L.clientKey }), 404, 600);
    expectError(await api(s.url, 'POST', '/admin/celulares/99999999/reanudar', { key: s.adminToken }), 404, 600);
    expectError(await api(s.url, 'POST', '/api/celular_reanudar.php?id=abc', { key: L.clientKey }), 400);
    expectError(await api(s.url, 'POST', `/api/celular_reanudar.php?id=${L.celularId}`, {}), 401);
  });

  it(`${name}: sends the network took and then reported failed (receipts ending them fallido) brake the line too`, async () => {
    // The simulator's own delivery receipts come late: a receipt never moves a message back, and these must find it enviado.
    const s = await start({ simDeliveryMs: 600_000, simReadMs: 600_000 });
    servers.push(s);
    const L = await linkedLine(s);
    await editCelular(s, L, { freno: 1 });
    const seen: LineBrakeEvent[] = [];
    s.core.bus.subscribe('celular.frenado', (e) => seen.push(e));
    const sim = s.core.gateway as SimGateway;
    const instancia = (await s.core.store.getCelular(L.celularId))!.gateway_instancia!;
    for (let i = 0; i < 5; i++) {
      const r = await send(s, L, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('taken'), directo: 1 });
      expectOk(r);
      expect(r.body.estado).toBe('enviado');
      const m = await mensaje(s, r.body.msg_id as string);
      await sim.receiptNow(instancia, m.gateway_msg_id!, 'error', 'the network reported it failed');
      expect((await mensaje(s, r.body.msg_id as string)).error_clase).toBe('fallido');
    }
    await until(async () => (await s.core.store.getCelular(L.celularId))?.frenado === 1, { what: 'the line braked by failed receipts' });
    expect(seen).toEqual([expect.objectContaining({ celular_id: L.celularId, frenado: true, causa: 'fallos', fallos: 5 })]);
  });

  it(`${name}: a failure report parked before its send's record, applied by it, brakes the line as one that came after`, async () => {
    const s = await start({ simDeliveryMs: 600_000, simReadMs: 600_000 });
    servers.push(s);
    const L = await linkedLine(s);
    await editCelular(s, L, { freno: 1 });
    // The network's "failed" for each send arrives before the worker records the send: parked, then applied by markSent.
    const sim = s.core.gateway as SimGateway;
    const sendReal = sim.send.bind(sim);
    sim.send = async (instancia, msg) => {
      const r = await sendReal(instancia, msg);
      expect(await s.core.store.receipt(L.celularId, r.gatewayMsgId, 'error', s.clock.now(), 'the network reported it failed')).toBe('parked');
      return r;
    };
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await send(s, L, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('parked') });
      expectOk(r, { modo: 'cola' });
      ids.push(r.body.msg_id as string);
    }
    await until(async () => (await s.core.store.getCelular(L.celularId))?.frenado === 1, { what: 'the line braked by parked failure reports' });
    for (const id of ids) expect(await mensaje(s, id)).toMatchObject({ estado: 'error', error_clase: 'fallido' });
  });

  it(`${name}: a resume in the middle of a quarter hour counts that quarter's messages: refusals after it brake the line`, async () => {
    const L = await linkedLine(s);
    await editCelular(s, L, { freno: 1 });
    // Two hours on, then 4 minutes into a quarter hour: the window starts again at this quarter (its messages count).
    const clock = s.clock as ManualClock;
    clock.advance(2 * 3_600_000 + 240_000);
    expect((await api(s.url, 'POST', `/api/celular_reanudar.php?id=${L.celularId}`, { key: L.clientKey })).body).toMatchObject({ reanudado: false });
    clock.advance(60_000);
    await refusedFive(s, L);
    await until(async () => (await s.core.store.getCelular(L.celularId))?.frenado === 1, { what: 'the line braked after its resume' });
    expect((await s.core.store.getCelular(L.celularId))!.frenado_motivo).toMatch(/5 of 5/);
  });

  it(`${name}: a line without the brake on only gets the event: it is not braked and its queue goes on`, async () => {
    const L = await linkedLine(s);
    (s.clock as ManualClock).advance(2 * 3_600_000);
    const before = events.length;
    await refusedFive(s, L);
    await until(() => events.slice(before).some((e) => e.celular_id === L.celularId), { what: 'the alert' });
    expect(events.slice(before).find((e) => e.celular_id === L.celularId)).toMatchObject({ frenado: false, causa: 'rechazados' });
    expect((await s.core.store.getCelular(L.celularId))!).toMatchObject({ frenado: 0, frenado_motivo: null });
    const r = await send(s, L, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('still') });
    await waitEstado(s, r.body.msg_id, SENT);
    const d = await send(s, L, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('direct'), directo: 1 });
    expect(d.status, d.text).toBe(200);
  });
}

describe('the brake on SQLite', () => {
  scenario('SQLite', (extra) => startTestServer({ ...opts, ...extra, clock: new ManualClock(Date.UTC(2026, 3, 1, 12)) }));
});

describeWith(postgres, 'the brake on PostgreSQL', () => {
  scenario('PostgreSQL', async (extra) => {
    const sch = await pgSchema();
    closers.push(sch.drop);
    return startTestServer({ ...opts, ...extra, store: schemaUrl(sch.schema), clock: new ManualClock(Date.UTC(2026, 3, 1, 12)) });
  });
});
