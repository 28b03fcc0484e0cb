import { afterAll, expect, it } from 'vitest';
import { api, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, POSTGRES_URL } from '../helpers/services.js';
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
  const u = new URL(POSTGRES_URL);
  u.searchParams.set('options', `-c search_path=${s.schema}`);
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

  it('one node per store: a second is refused naming the first, and starts once the first has stopped', async () => {
    const url = await storeUrl();
    const first = await startTestServer({ store: url });
    await expect(startTestServer({ store: url, dataDir: tempDir() })).rejects.toThrow(/is already served by another pasarela serve \(pasarela serve pid \d+ on /);
    await first.stop();
    const again = await startTestServer({ store: url });
    servers.push(again);
    expect((await api(again.url, 'GET', '/health')).status).toBe(200);
  });
});
