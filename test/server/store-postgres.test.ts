import { afterAll, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../../src/core/time/clock.js';
import { api, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';
import { pgSchema } from '../contract/adapters.js';
import { linkedLine, numeroNuevo, send, TEXT, uniqueText, waitEstado } from './send-helpers.js';

/**
 * `serve --store postgres://...`: the whole service on PostgreSQL, through the
 * real server over HTTP, and one node per store (a second is refused naming
 * the first, and may start once the first has stopped).
 */
const servers: TestServer[] = [];
const drops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const s of servers) await s.stop().catch(() => undefined);
  for (const d of drops) await d();
});

/** The URL of a schema of its own (pg reads `options` from the connection string). */
async function storeUrl(): Promise<string> {
  const s = await pgSchema();
  drops.push(s.drop);
  const u = new URL(schemaUrl(s.schema));
  return u.toString();
}

describeWith(postgres, 'serve on PostgreSQL', () => {
  it('sends queued and direct, keeps balances equal to the ledger, and lists history', async () => {
    const s = await startTestServer({ store: await storeUrl(), queue: { gapMinMs: 0, gapMaxMs: 0 } });
    servers.push(s);
    expect(s.storeSource).toMatch(/^postgres:\/\//);
    expect((await api(s.url, 'GET', '/health')).body).toMatchObject({ ok: true, store: 'postgres' });
    const line = await linkedLine(s, { saldo: 10 });
    const queued = await send(s, line, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('cola') });
    expect(queued.status, queued.text).toBe(200);
    const direct = await send(s, line, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('directo'), directo: 1 });
    expect(direct.status, direct.text).toBe(200);
    expect(direct.body).toMatchObject({ modo: 'directo', estado: 'enviado' });
    await waitEstado(s, queued.body.msg_id, ['enviado', 'entregado', 'leido']);
    const h = await api(s.url, 'GET', '/api/historial_listar.php?por_pagina=10', { key: line.clientKey });
    expect(h.status, h.text).toBe(200);
    expect(h.body.total).toBe(2);
    const saldo = await api(s.url, 'GET', '/api/saldo.php', { key: line.celularKey });
    expect(saldo.body.saldo_global).toBe(8);
  });

  it("nodes share a store: a second takes the first one's operator token and time zone; one given a different one refuses, naming it", async () => {
    const url = await storeUrl();
    const first = await startTestServer({ store: url, tz: 'America/Lima' });
    servers.push(first);
    const second = await startTestServer({ store: url, dataDir: tempDir() });
    servers.push(second);
    expect(second.adminToken).toBe(first.adminToken);
    expect(second.core.config.tz).toBe('America/Lima');
    expect((await api(second.url, 'GET', '/admin/clientes', { key: first.adminToken })).status).toBe(200);
    await expect(startTestServer({ store: url, dataDir: tempDir(), adminToken: 'x'.repeat(40) })).rejects.toThrow(
      /disagrees with the other nodes of this store on the operator token/,
    );
    await expect(startTestServer({ store: url, dataDir: tempDir(), tz: 'Europe/Madrid' })).rejects.toThrow(/on the time zone \(--tz\)/);
  });

  it('the inbox: a message received through one node is listed by the other; both purging at once remove each row once', async () => {
    const url = await storeUrl();
    // One clock for both, as nodes share NTP time: b's health pass may observe the new line, and an
    // observation stamped by a clock ahead of a's would outrank a's scan (core/accounts/celulares.ts applySessionStatus).
    const clock = new ManualClock(Date.now());
    const a = await startTestServer({ store: url, clock, inboxRetentionMs: 86_400_000, inboxPurgeIntervalMs: 0 });
    servers.push(a);
    const b = await startTestServer({ store: url, clock, dataDir: tempDir(), inboxRetentionMs: 86_400_000, inboxPurgeIntervalMs: 0 });
    servers.push(b);
    const line = await linkedLine(a);
    for (let i = 0; i < 5; i += 1) {
      const r = await api(a.url, 'POST', '/admin/sim/receive', {
        key: a.adminToken,
        json: { celular_id: line.celularId, de: '14155552671', texto: `hola ${i}` },
      });
      expect(r.status, r.text).toBe(200);
    }
    const listed = await api(b.url, 'GET', `/api/recibidos_listar.php?remitente=${encodeURIComponent('+1 415 555 2671')}&por_pagina=2`, {
      key: line.celularKey,
    });
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body).toMatchObject({ total: 5, total_paginas: 3 });
    expect(listed.body.recibidos.map((m: { texto: string }) => m.texto)).toEqual(['hola 4', 'hola 3']);
    clock.advance(2 * 86_400_000);
    const removed = await Promise.all([a.inbox.run(), b.inbox.run(), a.inbox.run(), b.inbox.run()]);
    expect(removed.reduce((x, y) => x + y, 0)).toBe(5);
    expect((await api(a.url, 'GET', '/api/recibidos_listar.php', { key: line.clientKey })).body.total).toBe(0);
  });

  it('a start that fails after its node registered (a port in use) leaves no live node and no lease behind', async () => {
    const url = await storeUrl();
    const a = await startTestServer({ store: url });
    servers.push(a);
    const port = Number(new URL(a.url).port);
    await expect(startTestServer({ store: url, dataDir: tempDir(), port })).rejects.toThrow(/EADDRINUSE/);
    expect((await a.core.store.nodes(0)).map((n) => n.alive)).toEqual([true]);
  });

  it("a line's human gap holds whichever node sends next, and each message is sent once", async () => {
    const url = await storeUrl();
    const gap = { gapMinMs: 700, gapMaxMs: 700 };
    // Real time: a shared store measures a line's rest on its own clock, which a test's clock cannot move.
    const a = await startTestServer({ store: url, queue: gap, clock: systemClock });
    servers.push(a);
    const b = await startTestServer({ store: url, dataDir: tempDir(), queue: gap, clock: systemClock });
    servers.push(b);
    const line = await linkedLine(a, { saldo: 20 });
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await send(i % 2 ? a : b, line, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText(`gap ${i}`) });
      expect(r.status, r.text).toBe(200);
      ids.push(r.body.msg_id as string);
    }
    const sent: number[] = [];
    for (const id of ids) sent.push(((await waitEstado(a, id, ['enviado', 'entregado', 'leido'], 15_000)) as { enviado_at: number }).enviado_at);
    // In arrival order, a gap apart, whichever node took each one.
    for (let i = 1; i < sent.length; i++) expect(sent[i]! - sent[i - 1]!).toBeGreaterThanOrEqual(700);
    const nodes = await a.core.store.nodes(0);
    expect(nodes.filter((n) => n.alive)).toHaveLength(2);
    const saldo = await api(a.url, 'GET', '/api/saldo.php', { key: line.celularKey });
    expect(saldo.body.saldo_global).toBe(14);
  }, 60_000);
});
