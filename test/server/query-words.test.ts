import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedOf, refusedInWords } from '../../src/core/api/expected-words.js';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';

/**
 * A query filter refused by its schema is told in words, as the CLI tells a
 * bad flag and core a bad day (issue 36's walk, finding 1): the API's 400
 * and the panel's listings (beside the filter at fault, or above the form
 * for the page number) say `field: "value": expected ...`, never the
 * validator's `must be >= 1` or its `querystring/` prefix.
 */

let s: TestServer;
let a: Seeded;
let cookie: string;

beforeAll(async () => {
  s = await startTestServer();
  a = await seedClient(s);
  const r = await fetch(`${s.url}/panel/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ credencial: s.adminToken }).toString(),
    redirect: 'manual',
  });
  expect(r.status).toBe(303);
  cookie = r.headers
    .getSetCookie()
    .find((c) => c.startsWith('pasarela_panel='))!
    .split(';')[0]!;
});
afterAll(async () => {
  await s?.stop();
});

const panel = async (path: string) => {
  const r = await fetch(`${s.url}${path}`, { headers: { cookie }, redirect: 'manual' });
  return { status: r.status, text: await r.text() };
};

/** The validator's own phrasing, none of which may reach a person. */
const VALIDATOR = /must be (>=|<=|integer|equal to one of)|must match|must NOT|querystring|allowed values/;

describe('core: what a field expects, in words', () => {
  it('says ranges, lists and lengths; null when it cannot', () => {
    expect(expectedOf({ type: 'integer', minimum: 1, maximum: 500 })).toBe('expected a whole number from 1 to 500');
    expect(expectedOf({ type: 'integer', minimum: 1 })).toBe('expected a whole number, 1 or more');
    expect(expectedOf({ type: 'string', enum: ['a', 'b'] })).toBe('expected one of a, b');
    expect(expectedOf({ type: 'string', maxLength: 20 })).toBe('expected at most 20 characters');
    expect(expectedOf({ type: 'object' })).toBeNull();
    expect(refusedInWords('page', 0, { type: 'integer', minimum: 1 })).toBe('page: "0": expected a whole number, 1 or more');
    expect(refusedInWords('x', 'y'.repeat(100), { type: 'integer' })).toBe(`x: "${'y'.repeat(39)}…": expected a whole number`);
  });
});

describe('the API', () => {
  it('answers a bad page, per-page count or estado with a 400 in words', async () => {
    const cases = [
      ['?page=0', 'page: "0": expected a whole number, 1 or more'],
      ['?por_pagina=abc', 'por_pagina: "abc": expected a whole number from 1 to 500'],
      ['?estado=bogus', 'estado: "bogus": expected one of enviado, entregado, leido, error, pendiente'],
    ] as const;
    for (const [q, words] of cases) {
      const r = await api(s.url, 'GET', `/api/historial_listar.php${q}`, { key: a.clientKey });
      expect(r.status, q).toBe(400);
      expect(r.body.api_descripcion, q).toBe(words);
      expect(r.body.api_codigo).toBe(100);
    }
    const audit = await api(s.url, 'GET', '/admin/auditoria?cliente_id=uno', { key: s.adminToken });
    expect(audit.status).toBe(400);
    expect(audit.body.api_descripcion).toMatch(/^cliente_id: "uno": expected a whole number/);
  });
});

describe('the panel', () => {
  it("shows each refusal in words on the listing's page, beside the filter at fault", async () => {
    const hist = `/panel/c/${a.clienteId}/historial`;
    for (const [path, field, words] of [
      [`${hist}?por_pagina=abc`, 'por_pagina', 'por_pagina: &quot;abc&quot;: expected a whole number from 1 to 500'],
      [`${hist}?estado=bogus`, 'estado', 'estado: &quot;bogus&quot;: expected one of enviado, entregado, leido, error, pendiente'],
      [`/panel/auditoria?cliente_id=uno`, 'cliente_id', 'cliente_id: &quot;uno&quot;: expected a whole number'],
      [`/panel/c/${a.clienteId}/recibidos?por_pagina=0`, 'por_pagina', 'por_pagina: &quot;0&quot;: expected a whole number from 1 to'],
      [`/panel/c/${a.clienteId}/movimientos?por_pagina=abc`, 'por_pagina', 'por_pagina: &quot;abc&quot;: expected a whole number from 1 to'],
    ] as const) {
      const r = await panel(path);
      expect(r.status, path).toBe(400);
      expect(r.text, path).toContain(words);
      // Beside its field: the field's own error paragraph.
      expect(r.text, path).toMatch(new RegExp(`id="f-${field}-error"[^>]*>${words.slice(0, 20).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
      expect(r.text.replace(/<[^>]*>/g, ''), path).not.toMatch(VALIDATOR);
    }
    // The page number has no field in the filter form: its words go above the form.
    const page0 = await panel(`${hist}?page=0`);
    expect(page0.status).toBe(400);
    expect(page0.text).toContain('page: &quot;0&quot;: expected a whole number, 1 or more');
    expect(page0.text.replace(/<[^>]*>/g, '')).not.toMatch(VALIDATOR);
  });
});
