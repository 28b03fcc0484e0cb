import type { FastifyInstance } from 'fastify';
import type { Core } from '../../core/context.js';
import { fail } from '../../core/errors.js';
import { normalizeNumero } from '../../core/phone.js';
import { SimConflict, SimGateway } from '../../gateways/sim.js';
import { bodyOf, operatorAuth, success } from '../http.js';
import { errorResponses, okResponse } from '../schemas/common.js';

/**
 * Controls of the simulated network (operator token): what a phone or the
 * network would do. Present only with `serve --gateway sim`.
 */
export default async function simRoutes(app: FastifyInstance, { core }: { core: Core }) {
  app.addHook('preValidation', operatorAuth(core));
  const sim = (): SimGateway => (core.gateway instanceof SimGateway ? core.gateway : fail('GATEWAY_NOT_SIM', "the simulator is not this server's gateway"));
  const security = [{ operator: [] }];
  const tags = ['simulador'];

  async function instanceOf(celularId: number): Promise<string> {
    const c = (await core.store.getCelular(celularId)) ?? fail('CELULAR_NOT_FOUND', `celular ${celularId} not found`);
    if (!c.gateway_instancia) fail('CONFLICT', `celular ${celularId} has no session yet: request its QR first (celular qr ${celularId})`);
    return c.gateway_instancia;
  }
  const conflict = (err: unknown): never => {
    if (err instanceof SimConflict) fail('CONFLICT', err.message);
    throw err;
  };
  const celularBody = (extra: Record<string, unknown> = {}, required: string[] = []) => ({
    type: 'object',
    required: ['celular_id', ...required],
    properties: { celular_id: { type: 'integer', minimum: 1 }, ...extra },
  });
  const statusResponse = { 200: okResponse({ celular_id: { type: 'integer' }, status: { type: 'string' } }), ...errorResponses };

  app.post('/admin/sim/scan', {
    schema: {
      operationId: 'adminSimEscanear',
      tags,
      security,
      summary: 'The phone scans the QR showing now, or types the pairing code: the session becomes connected',
      body: celularBody({
        qr: { type: 'string', description: 'when given, must be the QR showing now' },
        codigo: { type: 'string', description: 'the pairing code typed on the phone instead of scanning; must be the one issued' },
      }),
      response: statusResponse,
    },
    handler: async (req) => {
      const b = bodyOf(req) as { celular_id: number; qr?: string; codigo?: string };
      const inst = await instanceOf(b.celular_id);
      await sim().scan(inst, b.qr, b.codigo).catch(conflict);
      return success({ celular_id: b.celular_id, status: await sim().status(inst) }, { descripcion: 'escaneado' });
    },
  });

  app.post('/admin/sim/logout', {
    schema: {
      operationId: 'adminSimCerrarSesion',
      tags,
      security,
      summary: 'The phone removes the linked device: the session becomes logged_out',
      body: celularBody(),
      response: statusResponse,
    },
    handler: async (req) => {
      const b = bodyOf(req) as { celular_id: number };
      const inst = await instanceOf(b.celular_id);
      await sim().phoneLogout(inst).catch(conflict);
      return success({ celular_id: b.celular_id, status: await sim().status(inst) }, { descripcion: 'sesion cerrada' });
    },
  });

  app.post('/admin/sim/receive', {
    schema: {
      operationId: 'adminSimRecibir',
      tags,
      security,
      summary: 'Someone sends the line a text message (fires messages.received)',
      body: celularBody({ de: { type: 'string', minLength: 1, maxLength: 32 }, texto: { type: 'string', minLength: 1, maxLength: 4096 } }, ['de', 'texto']),
      response: { 200: okResponse({ celular_id: { type: 'integer' }, de: { type: 'string' }, gateway_msg_id: { type: 'string' } }), ...errorResponses },
    },
    handler: async (req) => {
      const b = bodyOf(req) as { celular_id: number; de: string; texto: string };
      const de = normalizeNumero(b.de);
      if (!de.ok) fail('INVALID_PARAMS', `de: ${de.reason}`);
      const inst = await instanceOf(b.celular_id);
      const r = await sim().receive(inst, de.numero, b.texto).catch(conflict);
      return success({ celular_id: b.celular_id, de: de.numero, gateway_msg_id: r.gatewayMsgId }, { descripcion: 'mensaje recibido' });
    },
  });

  const failResponse = { 200: okResponse({ numero: { type: 'string' }, motivo: { type: 'string' }, activo: { type: 'boolean' } }), ...errorResponses };
  app.post('/admin/sim/fail', {
    schema: {
      operationId: 'adminSimProgramarFallo',
      tags,
      security,
      summary: 'Every later send to this number fails permanently (activo=false clears the rule)',
      body: {
        type: 'object',
        required: ['numero'],
        properties: {
          numero: { type: 'string', minLength: 1, maxLength: 32 },
          motivo: { type: 'string', maxLength: 200 },
          activo: { type: 'boolean', default: true },
        },
      },
      response: failResponse,
    },
    handler: async (req) => {
      const b = bodyOf(req) as { numero: string; motivo?: string; activo: boolean };
      const n = normalizeNumero(b.numero);
      if (!n.ok) fail('INVALID_PARAMS', `numero: ${n.reason}`);
      const motivo = b.motivo?.trim() || 'recipient is not on the network';
      if (b.activo) await sim().failNumber(n.numero, motivo);
      else await sim().clearFail(n.numero);
      return success({ numero: n.numero, motivo, activo: b.activo }, { descripcion: b.activo ? 'fallo programado' : 'fallo retirado' });
    },
  });

  app.get('/admin/sim/fail', {
    schema: {
      operationId: 'adminSimListarFallos',
      tags,
      security,
      summary: 'Numbers whose sends fail',
      response: {
        200: okResponse({ reglas: { type: 'array', items: { type: 'object', properties: { numero: { type: 'string' }, motivo: { type: 'string' } } } } }),
        ...errorResponses,
      },
    },
    handler: async () => success({ reglas: await sim().failRules() }),
  });
}
