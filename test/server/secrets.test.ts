import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type ApiResponse, type Seeded, type TestServer } from '../helpers/server.js';
import { numeroNuevo } from '../helpers/expect.js';
import { RawRequest } from '../helpers/raw-http.js';

/**
 * Secrets (keys, gateway tokens, legacy tokens, the operator token) never
 * appear in a response that is not the one issuing them, nor in the log.
 */

const sha256 = (x: string) => createHash('sha256').update(x, 'utf8').digest('hex');

/** Every property name in a JSON value, recursively. */
function propertyNames(v: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(v)) for (const x of v) propertyNames(x, out);
  else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      out.add(k);
      propertyNames(x, out);
    }
  }
  return out;
}

const SECRET_FIELD = /hash|secret|^key$|^api_key$|^gateway_token$|^token_legacy$|^token$|password/i;

let s: TestServer;
let A: Seeded;
let B: Seeded;
let a2: { id: number; key: string; token: string };
let legacy: string;
let vinculado: { id: number; key: string; token: string };
/** Every secret this file has used or been given. */
const secrets = (): string[] => [
  s.adminToken,
  A.clientKey,
  A.celularKey,
  A.gatewayToken,
  B.clientKey,
  B.celularKey,
  B.gatewayToken,
  a2.key,
  a2.token,
  legacy,
  vinculado.key,
  vinculado.token,
];

function expectNoSecrets(r: ApiResponse, label: string, checkNames = true): void {
  expect(r.status, `${label}: ${r.text.slice(0, 200)}`).toBeLessThan(500);
  for (const secret of secrets()) {
    expect(r.text.includes(secret), `${label} contains a secret`).toBe(false);
    expect(r.text.includes(sha256(secret)), `${label} contains a secret's hash`).toBe(false);
    // The secret part alone (after WA_<id>_ / WAC_<id>_) must not leak either.
    const tail = secret.replace(/^WAC?_\d+_/, '');
    expect(r.text.includes(tail), `${label} contains a secret's tail`).toBe(false);
  }
  if (!checkNames) return;
  const names = [...propertyNames(r.body)].filter((n) => SECRET_FIELD.test(n));
  expect(names, label).toEqual([]);
}

beforeAll(async () => {
  s = await startTestServer({ authMaxFailures: 100_000 });
  A = await seedClient(s, { numero: numeroNuevo() });
  B = await seedClient(s, { numero: numeroNuevo() });
  const c = await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, form: { numero: numeroNuevo(), nombre_interno: 'dos' } });
  expect(c.status).toBe(201);
  a2 = { id: c.body.celular_id, key: c.body.api_key, token: c.body.gateway_token };
  const l = await api(s.url, 'POST', `/admin/celulares/${A.celularId}/token-legacy`, { key: s.adminToken, json: {} });
  expect(l.status).toBe(200);
  legacy = l.body.token_legacy;
  const v = await api(s.url, 'POST', '/api/celular_vincular_qr.php', { key: A.clientKey, json: { numero: numeroNuevo(), nombre: 'v' } });
  expect(v.status).toBe(200);
  vinculado = { id: v.body.celular_id, key: v.body.api_key, token: v.body.gateway_token };
});
afterAll(async () => {
  await s?.stop();
});

describe('responses', () => {
  it('reads by every kind of credential carry no key, token or hash', async () => {
    for (const key of [A.clientKey, A.celularKey, A.gatewayToken, legacy, a2.key, a2.token]) {
      expectNoSecrets(await api(s.url, 'GET', '/api/info.php', { key }), 'info');
      expectNoSecrets(await api(s.url, 'GET', '/api/saldo.php', { key }), 'saldo');
      expectNoSecrets(await api(s.url, 'GET', '/api/celulares.php', { key }), 'celulares');
      expectNoSecrets(await api(s.url, 'GET', `/api/info.php?key=${encodeURIComponent(key)}`), 'info ?key=');
    }
    expectNoSecrets(await api(s.url, 'GET', `/api/celular.php?id=${A.celularId}`, { key: A.clientKey }), 'celular');
    expectNoSecrets(await api(s.url, 'GET', `/api/celular.php?id=${a2.id}&key=${encodeURIComponent(a2.token)}`), 'celular by token');
    expectNoSecrets(await api(s.url, 'GET', `/api/celular_status.php?id=${A.celularId}`, { key: legacy }), 'status');
    expectNoSecrets(await api(s.url, 'POST', `/api/celular_qr.php?id=${A.celularId}`, { json: { key: A.celularKey } }), 'qr');
    expectNoSecrets(await api(s.url, 'POST', `/api/celular_editar.php?id=${A.celularId}`, { form: { key: A.clientKey, nombre_interno: 'editado' } }), 'editar');
    const again = await api(s.url, 'POST', '/api/celular-vincular-qr.php', {
      key: A.clientKey,
      json: { numero: (await api(s.url, 'GET', `/api/celular.php?id=${vinculado.id}`, { key: A.clientKey })).body.celular.numero },
    });
    expect(again.body.creado).toBe(false);
    expectNoSecrets(again, 'vincular (existing)');
  });

  it('operator reads carry no key, token or hash', async () => {
    const k = { key: s.adminToken };
    expectNoSecrets(await api(s.url, 'GET', '/admin/clientes', k), 'admin list');
    expectNoSecrets(await api(s.url, 'GET', `/admin/clientes/${A.clienteId}`, k), 'admin show');
    expectNoSecrets(await api(s.url, 'PATCH', `/admin/clientes/${A.clienteId}`, { ...k, json: { nombre: 'A cambiado' } }), 'admin edit');
    expectNoSecrets(await api(s.url, 'POST', '/admin/saldo', { ...k, json: { cliente_id: A.clienteId, celular_id: A.celularId, monto: 5 } }), 'admin saldo');
    expectNoSecrets(await api(s.url, 'GET', '/admin/auditoria?limit=1000', k), 'auditoria');
    expectNoSecrets(await api(s.url, 'GET', '/admin/sim/fail', k), 'sim fail');
    // The API description names the fields (key, api_key...) but holds no value.
    expectNoSecrets(await api(s.url, 'GET', '/openapi.json'), 'openapi', false);
    expectNoSecrets(await api(s.url, 'GET', '/health'), 'health');
  });

  it('refusals do not echo the credential presented', async () => {
    const near = `${A.celularKey.slice(0, -4)}AAAA`;
    for (const r of [
      await api(s.url, 'GET', '/api/info.php', { key: near }),
      await api(s.url, 'GET', `/api/info.php?key=${encodeURIComponent(near)}`),
      await api(s.url, 'GET', '/api/celulares.php', { key: s.adminToken }),
      await api(s.url, 'GET', '/admin/clientes', { key: A.clientKey }),
      await api(s.url, 'GET', `/api/celular.php?id=${B.celularId}`, { key: A.celularKey }),
      await api(s.url, 'GET', `/api/celular.php?id=${a2.id}`, { key: A.gatewayToken }),
      await api(s.url, 'POST', '/api/celular_crear.php', { json: { key: A.celularKey, numero: numeroNuevo() } }),
      await api(s.url, 'POST', `/api/celular_qr.php?id=${A.celularId}`, { key: A.celularKey, json: { key: a2.key } }),
    ]) {
      expect(r.status).toBeGreaterThanOrEqual(400);
      expectNoSecrets(r, `refusal ${r.status}`);
      expect(r.text.includes(near)).toBe(false);
    }
  });

  it('the answers that issue a secret carry only that one', async () => {
    const c = await api(s.url, 'POST', '/api/celular_crear.php', { key: B.clientKey, json: { numero: numeroNuevo() } });
    expect(c.status).toBe(201);
    const others = secrets();
    for (const x of others) expect(c.text.includes(x)).toBe(false);
    expect([...propertyNames(c.body)].filter((n) => /hash/.test(n))).toEqual([]);
    const rot = await api(s.url, 'POST', `/admin/celulares/${c.body.celular_id}/rotar-key`, { key: s.adminToken });
    expect(rot.status).toBe(200);
    expect(rot.text.includes(c.body.gateway_token)).toBe(false);
    expect(rot.text.includes(c.body.api_key)).toBe(false);
  });
});

describe('logs', () => {
  it('hold none of the keys and tokens used, in headers, bodies or ?key= queries', async () => {
    // More traffic with every secret in every place a client may put it.
    for (const key of secrets()) {
      await api(s.url, 'GET', `/api/saldo.php?key=${encodeURIComponent(key)}`);
      await api(s.url, 'GET', `/api/celular.php?id=${A.celularId}&key=${encodeURIComponent(key)}&x=1`);
      await api(s.url, 'GET', `/api/info.php?x=1&KEY=${encodeURIComponent(key)}`);
      await api(s.url, 'GET', `/api/info.php?token=${encodeURIComponent(key)}`);
      await api(s.url, 'POST', `/api/celular_qr.php?id=${A.celularId}`, { form: { key } });
      await api(s.url, 'POST', `/api/celular_qr.php?id=${A.celularId}&key=${encodeURIComponent(key)}`, { json: { key } });
      await api(s.url, 'GET', `/admin/clientes?key=${encodeURIComponent(key)}`, { key });
      await api(s.url, 'GET', `/no-existe?key=${encodeURIComponent(key)}`);
    }
    await api(s.url, 'POST', `/admin/celulares/${A.celularId}/token-legacy?token=x`, { key: s.adminToken, json: { token: 'otro-token-legacy-0000' } });
    await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, raw: `{"key":"${A.clientKey}", bad json`, contentType: 'application/json' });

    expect(s.logs.length).toBeGreaterThan(50);
    for (const line of s.logs) expect(() => JSON.parse(line)).not.toThrow();
    const all = s.logs.join('\n');
    expect(all).toContain('[REDACTED]');
    expect(all).toContain('/api/saldo.php?key=[REDACTED]');
    for (const secret of [...secrets(), 'otro-token-legacy-0000']) {
      expect(all.includes(secret), 'a secret is in the log').toBe(false);
      expect(all.includes(encodeURIComponent(secret)), 'an encoded secret is in the log').toBe(false);
      expect(all.includes(secret.replace(/^WAC?_\d+_/, '')), 'a secret tail is in the log').toBe(false);
    }
    expect(all).not.toMatch(/authorization/i);
  });

  it('hold no phone number from a URL, in the JSON or the pretty format: number parameters masked whole, 7+ digit runs elsewhere, ids kept', async () => {
    const pretty = await startTestServer({ logFormat: 'pretty', logColor: false });
    try {
      for (const t of [s, pretty]) {
        const C = t === s ? A : await seedClient(t, { numero: numeroNuevo() });
        const paths = [
          `/api/recibidos_listar.php?celular_id=${C.celularId}&remitente=5215599990000`,
          `/api/historial_listar.php?destinatario=%2B52%2055%201234%205678&celular_id=${C.celularId}`,
          `/api/historial_listar.php?Destinatario=5215544443333&desde=2026-01-02`,
          `/api/info.php?de=5215522221111&para=5215500001111&numero=5215566665555&telefono=5566665555`,
          `/api/info.php?otro=tel%3A%2B5215577776666&id=12345678901`,
        ];
        for (const path of paths) expect((await api(t.url, 'GET', path, { key: C.clientKey })).status, path).toBeLessThan(500);
        const all = t.logs.join('\n');
        for (const n of [
          '5215599990000',
          '1234 5678',
          '1234%205678',
          '55%201234',
          '5215544443333',
          '5215522221111',
          '5215500001111',
          '5215566665555',
          '5566665555',
          '5215577776666',
        ]) {
          expect(all.includes(n), `${n} in the ${t === s ? 'json' : 'pretty'} log`).toBe(false);
        }
        expect(all).toContain(`/api/recibidos_listar.php?celular_id=${C.celularId}&remitente=[number]`);
        expect(all).toContain('desde=2026-01-02');
        expect(all).toContain('otro=[REDACTED]&id=12345678901');
      }
    } finally {
      await pretty.stop();
    }
  });

  // Keys and texts under any name, in any place a raw request line can put them: none reaches the log,
  // at info or at debug (where each request has a second line), in JSON or pretty.
  it('hold no key, text or number under an unexpected name or place: ?apikey= ?x= ?key[]= ?key%00= ;key= #key= /KEY ?mensaje= /api/NUMBER', async () => {
    const debug = await startTestServer({ logLevel: 'debug' });
    const pretty = await startTestServer({ logLevel: 'debug', logFormat: 'pretty', logColor: false });
    try {
      for (const t of [s, debug, pretty]) {
        const C = t === s ? A : await seedClient(t, { numero: numeroNuevo() });
        const k = encodeURIComponent(C.clientKey);
        const text = 'SECRET-TEXT-del-cliente';
        const paths = [
          `/api/info.php?apikey=${k}`,
          `/api/info.php?x=${k}`,
          `/api/info.php?key[]=${k}`,
          `/api/info.php?key%5B%5D=${k}`,
          `/api/info.php?key%00=${k}`,
          `/api/info.php;key=${k}`,
          `/api/info.php#key=${k}`,
          `/api/info.php?${k}`,
          `/api/info.php?${k}=1`,
          `/${k}`,
          `/api/${k}/info.php`,
          `/api/info.php?limit=${k}&estado=${k}&id=${k}&desde=${k}`,
          `/api/info.php?x=${encodeURIComponent(legacy)}&estado=${encodeURIComponent(legacy)}`,
          `/api/${encodeURIComponent(legacy)}`,
          `/api/info.php?x=${encodeURIComponent(C.gatewayToken)}`,
          `/api/${C.gatewayToken}`,
          `/api/mensaje_enviar_texto.php?mensaje=${text}&destinatario=5215512345678`,
          `/api/mensaje_enviar_texto.php?texto=${text}`,
          `/api/mensaje_enviar_texto.php?${encodeURIComponent(`hola ${text}, te escribo`)}`,
          '/api/525512398765',
          '/api/celular.php?id=1&desde=2026-01-02&limit=20&page=2&estado=pendiente',
        ];
        for (const path of paths) {
          const raw = new RawRequest(t.url, path.includes('mensaje_enviar') ? 'POST' : 'GET', path, { Connection: 'close', 'Content-Length': 0 });
          try {
            expect((await raw.response()).status, path).toBeLessThan(500);
          } finally {
            raw.destroy();
          }
        }
        const all = t.logs.join('\n');
        const level = t === s ? 'info' : 'debug';
        for (const secret of [C.clientKey, C.gatewayToken, legacy]) {
          expect(all.includes(secret.replace(/^WAC?_\d+_/, '')), `a secret in the ${level} log`).toBe(false);
          expect(all.includes(encodeURIComponent(secret).replace(/^WAC?_\d+_/, '')), `an encoded secret in the ${level} log`).toBe(false);
        }
        expect(all).not.toContain('SECRET-TEXT');
        expect(all).not.toContain('525512398765');
        expect(all).not.toContain('5215512345678');
        // What is harmless stays readable.
        expect(all).toContain('/api/info.php?apikey=[REDACTED]');
        expect(all).toContain('/api/info.php;[REDACTED]');
        expect(all).toContain('/api/info.php#[REDACTED]');
        expect(all).toContain('/api/[number]');
        expect(all).toContain('/api/mensaje_enviar_texto.php?mensaje=[REDACTED]&destinatario=[number]');
        expect(all).toContain('/api/celular.php?id=1&desde=2026-01-02&limit=20&page=2&estado=pendiente');
        if (t !== s) expect(t.logs.some((l) => l.includes('incoming request'))).toBe(true);
      }
    } finally {
      await debug.stop();
      await pretty.stop();
    }
  });

  // Fastify decodes percent-escapes in query names, so `?k%65y=WA_...` authenticates as `key`: the
  // logged URL must be masked after that decoding, not by the literal name.
  it('a ?key= whose name is percent-encoded is not logged in clear', async () => {
    const r = await api(s.url, 'GET', `/api/info.php?k%65y=${encodeURIComponent(B.celularKey)}`);
    expect(r.status).toBe(200);
    expect(s.logs.join('\n').includes(B.celularKey.replace(/^WA_\d+_/, ''))).toBe(false);
  });
});
