import { afterAll, beforeAll, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';

/** Parallel direct sends cannot pass a cap together: the check is inside the acceptance transaction. */
let s: TestServer;
let key: string;
beforeAll(async () => {
  s = await startTestServer();
  const c = await api(s.url, 'POST', '/admin/clientes', { key: s.adminToken, json: { nombre: 'Caps', email: 'c@example.com', saldo: 100 } });
  const cel = await api(s.url, 'POST', '/api/celular_crear.php', { key: c.body.api_key, json: { numero: '5215512340000' } });
  key = cel.body.api_key;
  await api(s.url, 'POST', `/api/celular_qr.php?id=${cel.body.celular_id}`, { key });
  await api(s.url, 'POST', '/admin/sim/scan', { key: s.adminToken, json: { celular_id: cel.body.celular_id } });
  await api(s.url, 'POST', `/api/celular_editar.php?id=${cel.body.celular_id}`, { key, json: { max_envios_por_minuto: 5 } });
});
afterAll(async () => {
  await s.stop();
});

it('20 parallel direct sends against a cap of 5 a minute: exactly 5 pass, 15 get 429 with retry_after', async () => {
  const rs = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      api(s.url, 'POST', '/api/mensaje_enviar_texto.php', { key, json: { destinatario: '5215598765432', mensaje: `m${i}`, directo: 1 } }),
    ),
  );
  const ok = rs.filter((r) => r.status === 200);
  const capped = rs.filter((r) => r.status === 429);
  expect(ok).toHaveLength(5);
  expect(capped).toHaveLength(15);
  for (const r of capped) {
    expect(r.body).toMatchObject({ ok: false, api_codigo: 304 });
    expect(r.body.retry_after).toBeGreaterThan(0);
    expect(r.body.retry_after).toBeLessThanOrEqual(60);
    expect(r.headers.get('retry-after')).toBe(String(r.body.retry_after));
  }
  const info = await api(s.url, 'GET', '/api/saldo.php', { key });
  expect(info.body.saldo_global).toBe(95);
});
