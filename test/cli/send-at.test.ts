import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import { injectTransport } from '../helpers/inject-http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { linkedLine, numeroNuevo } from '../server/send-helpers.js';
import { Cli, expectJsonOnly, ndjson } from './helpers.js';

/** `pasarela send text --at` and the `enviar_en` column of `send bulk` (docs/scheduling.md), in-process against a real server. */
let s: TestServer;
let cli: Cli;
const T0 = Date.UTC(2026, 3, 1, 12);
const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

beforeAll(async () => {
  s = await startTestServer({ tz: 'UTC', clock: new ManualClock(T0), queue: { gapMinMs: 0, gapMaxMs: 0 } });
  cli = new Cli(s.url, injectTransport(s.app));
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

describe('send --at', () => {
  it('schedules a queued send: pendiente with enviar_en, sent once due; mensaje shows it', async () => {
    const l = await linkedLine(s, { saldo: 5 });
    const env = { PASARELA_KEY: l.celularKey };
    const r = await cli.run(['send', 'text', numeroNuevo(), 'recordatorio', '--at', '2026-04-01T11:00:00-03:00', '--json'], { env });
    const b = expectJsonOnly(r);
    expect(b).toMatchObject({ ok: true, modo: 'cola', estado: 'pendiente', enviar_en: iso(T0 + 2 * HOUR) });
    const plain = await cli.run(['send', 'text', numeroNuevo(), 'otro', '--at', iso(T0 + HOUR)], { env });
    expect(plain.exitCode, plain.stderr).toBe(0);
    expect(plain.stderr).toMatch(/scheduled: it stays pendiente until 2026-04-01T13:00:00.000Z/);
    await s.stepQueue();
    expect((await s.core.store.getMensaje(b.msg_id))?.estado).toBe('pendiente');
    const shown = await cli.run(['mensaje', b.msg_id], { env });
    expect(shown.stdout).toMatch(/enviar_en\s+2026-04-01T14:00:00.000Z/);
    (s.clock as ManualClock).set(T0 + 2 * HOUR);
    await s.stepQueue();
    await s.stepQueue();
    expect((await s.core.store.getMensaje(b.msg_id))?.estado).not.toBe('pendiente');
  });

  it('a malformed instant or --at with --directo is a usage error (exit 2, nothing sent); more than 30 days ahead is the server 400 (exit 1)', async () => {
    const l = await linkedLine(s, { saldo: 5 });
    const env = { PASARELA_KEY: l.celularKey };
    const bad = await cli.run(['send', 'text', numeroNuevo(), 'x', '--at', 'mañana'], { env });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/--at.*RFC 3339/);
    const both = await cli.run(['send', 'text', numeroNuevo(), 'x', '--at', iso(T0 + HOUR), '--directo'], { env });
    expect(both.exitCode).toBe(2);
    expect(both.stderr).toMatch(/--at schedules a queued send/);
    const far = await cli.run(['send', 'text', numeroNuevo(), 'x', '--at', iso((s.clock as ManualClock).now() + 31 * 24 * HOUR)], { env });
    expect(far.exitCode).toBe(1);
    expect(far.stderr).toMatch(/at most 30 days ahead/);
    expect((await s.core.store.listMensajes({ cliente_id: l.clienteId, page: 1, por_pagina: 1 })).total).toBe(0);
  });
});

describe('send bulk: the enviar_en column', () => {
  it('schedules the rows that fill it; an empty cell sends now; a malformed one is that row refused', async () => {
    const l = await linkedLine(s, { saldo: 10 });
    const now = (s.clock as ManualClock).now();
    const path = join(cli.home, 'recordatorios.csv');
    const [d1, d2, d3] = [numeroNuevo(), numeroNuevo(), numeroNuevo()];
    writeFileSync(path, ['destinatario,nombre,enviar_en', `${d1},Ana,${iso(now + HOUR)}`, `${d2},Beto,`, `${d3},Caro,el lunes`].join('\n') + '\n');
    const r = await cli.run(['send', 'bulk', path, '--text', 'Hola {nombre}'], { env: { PASARELA_KEY: l.celularKey } });
    expect(r.exitCode, r.stderr).toBe(12);
    const rows = Object.fromEntries(ndjson(r.stdout).map((x) => [x.row, x]));
    expect(rows[1]).toMatchObject({ ok: true, modo: 'cola' });
    expect(rows[2]).toMatchObject({ ok: true, modo: 'cola' });
    expect(rows[3]).toMatchObject({ ok: false, error: expect.stringMatching(/enviar_en "el lunes" is not an RFC 3339 instant/) });
    expect((await s.core.store.getMensaje(rows[1]!.msg_id as string))?.enviar_en).toBe(now + HOUR);
    expect((await s.core.store.getMensaje(rows[2]!.msg_id as string))?.enviar_en ?? null).toBeNull();
  });
});
