import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';

/** GET /openapi.json documents every endpoint (aliases included) and the shared schemas. */

let s: TestServer;
let doc: any;

beforeAll(async () => {
  s = await startTestServer();
  const r = await api(s.url, 'GET', '/openapi.json');
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toMatch(/^application\/json/);
  doc = r.body;
});
afterAll(async () => {
  await s?.stop();
});

const ENDPOINTS: Array<[string, string[]]> = [
  ['/health', ['get']],
  ['/api/info.php', ['get']],
  ['/api/saldo.php', ['get']],
  ['/api/celulares.php', ['get']],
  ['/api/celular.php', ['get']],
  ['/api/celular_crear.php', ['post']],
  ['/api/celular-crear.php', ['post']],
  ['/api/admin-celular-crear.php', ['post']],
  ['/api/celular_editar.php', ['post']],
  ['/api/celular_eliminar.php', ['post']],
  ['/api/celular_qr.php', ['post']],
  ['/api/celular_status.php', ['get']],
  ['/api/celular_vincular_qr.php', ['post']],
  ['/api/celular-vincular-qr.php', ['post']],
  ['/admin/clientes', ['get', 'post']],
  ['/admin/clientes/{id}', ['get', 'patch', 'post']],
  ['/admin/clientes/{id}/rotar-key', ['post']],
  ['/admin/saldo', ['post']],
  ['/admin/celulares/{id}/token-legacy', ['post']],
  ['/admin/celulares/{id}/rotar-key', ['post']],
  ['/admin/auditoria', ['get']],
  ['/admin/sim/scan', ['post']],
  ['/admin/sim/logout', ['post']],
  ['/admin/sim/receive', ['post']],
  ['/admin/sim/fail', ['get', 'post']],
  ['/api/recibidos_listar.php', ['get']],
];

describe('GET /openapi.json', () => {
  it('is an OpenAPI 3 document', () => {
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.info).toMatchObject({ title: 'pasarela', version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
  });

  it('lists every path with its methods, the aliases included', () => {
    for (const [path, methods] of ENDPOINTS) {
      expect(doc.paths, path).toHaveProperty([path]);
      for (const m of methods) expect(doc.paths[path], `${m.toUpperCase()} ${path}`).toHaveProperty(m);
    }
  });

  it('declares the security of each group: bearer on /api, operator on /admin, none on /health', () => {
    for (const [path, methods] of ENDPOINTS) {
      for (const m of methods) {
        const op = doc.paths[path][m];
        const schemes = (op.security ?? []).flatMap((x: Record<string, unknown>) => Object.keys(x));
        if (path.startsWith('/api/')) expect(schemes, path).toEqual(['bearer']);
        else if (path.startsWith('/admin/')) expect(schemes, path).toEqual(['operator']);
        else expect(schemes, path).toEqual([]);
      }
    }
    expect(doc.components.securitySchemes).toMatchObject({ bearer: { type: 'http', scheme: 'bearer' }, operator: { type: 'http', scheme: 'bearer' } });
  });

  it('has components.schemas Celular, Cliente and Error with the fields of docs/design.md §4', () => {
    const { Celular, Cliente, Error: Err } = doc.components.schemas;
    expect(Object.keys(Celular.properties)).toEqual(
      expect.arrayContaining([
        'id',
        'numero',
        'nombre_interno',
        'estado',
        'saldo_actual',
        'max_envios_por_minuto',
        'max_envios_por_hora',
        'max_envios_por_dia',
        'hora_inicio_permitido',
        'hora_fin_permitido',
        'gateway_instancia',
        'tiene_gateway_token',
        'tiene_token_legacy',
        'last_status_check',
        'last_status',
      ]),
    );
    expect(Celular.properties.estado.enum).toEqual(['activo', 'suspendido', 'desconectado']);
    expect(Object.keys(Cliente.properties)).toEqual(
      expect.arrayContaining(['id', 'nombre', 'email', 'estado', 'plan', 'max_celulares', 'consumo_mes_actual', 'created_at']),
    );
    expect(Cliente.properties.plan.enum).toEqual(['medido', 'ilimitado']);
    expect(Err.required).toEqual(expect.arrayContaining(['ok', 'error', 'api_codigo', 'api_texto', 'api_descripcion', 'saldo']));
    expect(Object.keys(Err.properties)).toEqual(expect.arrayContaining(['retry_after', 'codigo', 'detalle']));
    // Stored-only fields are not part of the public shapes.
    for (const schema of [Celular, Cliente]) {
      expect(Object.keys(schema.properties).filter((k) => /hash|secret|api_key|^gateway_token$|^token_legacy$/.test(k))).toEqual([]);
    }
  });

  it('documents the inbox listing: its operationId, query filters and record fields', () => {
    const op = doc.paths['/api/recibidos_listar.php'].get;
    expect(op.operationId).toBe('listarRecibidos');
    expect(op.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(['celular_id', 'remitente', 'desde', 'hasta', 'page', 'por_pagina']),
    );
    const page = op.responses['200'].content['application/json'].schema;
    expect(Object.keys(page.properties)).toEqual(expect.arrayContaining(['page', 'por_pagina', 'total', 'total_paginas', 'recibidos']));
    expect(page.properties.recibidos.items.required).toEqual(['id', 'celular_id', 'de', 'tipo', 'texto', 'media', 'gateway_msg_id', 'fecha', 'created_at']);
  });

  it('refers error responses to the Error schema and celulares to Celular', () => {
    const text = JSON.stringify(doc);
    expect(text).toContain('#/components/schemas/Error');
    expect(text).toContain('#/components/schemas/Celular');
    expect(text).toContain('#/components/schemas/Cliente');
    const list = doc.paths['/api/celulares.php'].get.responses['200'].content['application/json'].schema;
    expect(list.properties.celulares.items.$ref).toBe('#/components/schemas/Celular');
  });

  it('needs no credential and is not itself listed', async () => {
    expect(doc.paths).not.toHaveProperty(['/openapi.json']);
    const r = await api(s.url, 'GET', '/openapi.json', { key: 'garbage-garbage-garbage' });
    expect(r.status).toBe(200);
  });
});
