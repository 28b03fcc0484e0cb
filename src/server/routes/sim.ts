import type { FastifyInstance } from 'fastify';
import { API } from '../../core/api/api-routes.js';
import type { Core } from '../../core/context.js';
import { fail } from '../../core/api/errors.js';
import { FIELD_LIMITS } from '../../core/api/limits.js';
import { normalizeNumero } from '../../core/accounts/phone.js';
import { SimConflict, SimGateway } from '../../gateways/sim.js';
import { operatorAuth, success } from '../http.js';
import { errorResponses, okResponse } from '../schemas/common.js';
import { Type, typed, type TProperties } from '../schemas/typed.js';

/**
 * Controls of the simulated network (operator token): what a phone or the
 * network would do. Present only with `serve --gateway sim`.
 */
export default async function simRoutes(fastify: FastifyInstance, { core }: { core: Pick<Core, 'store' | 'counters' | 'gateway' | 'clock' | 'config'> }) {
  const app = typed(fastify);
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
  /** The body of a control: the line, then the control's own fields. */
  const celularBody = <P extends TProperties>(extra: P) => Type.Object({ celular_id: Type.Integer({ minimum: 1 }), ...extra });
  const statusResponse = { 200: okResponse({ celular_id: { type: 'integer' }, status: { type: 'string' } }), ...errorResponses };

  app.post(API.simScan, {
    schema: {
      operationId: 'adminSimEscanear',
      tags,
      security,
      summary: 'The phone scans the QR showing now, or types the pairing code: the session becomes connected',
      body: celularBody({
        qr: Type.Optional(Type.String({ description: 'when given, must be the QR showing now' })),
        codigo: Type.Optional(Type.String({ description: 'the pairing code typed on the phone instead of scanning; must be the one issued' })),
      }),
      response: statusResponse,
    },
    handler: async (req) => {
      const b = req.body;
      const inst = await instanceOf(b.celular_id);
      await sim().scan(inst, b.qr, b.codigo).catch(conflict);
      return success({ celular_id: b.celular_id, status: await sim().status(inst) }, { descripcion: 'escaneado' });
    },
  });

  app.post(API.simLogout, {
    schema: {
      operationId: 'adminSimCerrarSesion',
      tags,
      security,
      summary: 'The phone removes the linked device: the session becomes logged_out',
      body: celularBody({}),
      response: statusResponse,
    },
    handler: async (req) => {
      const b = req.body;
      const inst = await instanceOf(b.celular_id);
      await sim().phoneLogout(inst).catch(conflict);
      return success({ celular_id: b.celular_id, status: await sim().status(inst) }, { descripcion: 'sesion cerrada' });
    },
  });

  app.post(API.simReceive, {
    schema: {
      operationId: 'adminSimRecibir',
      tags,
      security,
      summary: 'Someone sends the line a text message (fires messages.received)',
      body: celularBody({
        de: Type.String({ minLength: 1, maxLength: FIELD_LIMITS.numero }),
        texto: Type.String({ minLength: 1, maxLength: FIELD_LIMITS.mensaje }),
      }),
      response: { 200: okResponse({ celular_id: { type: 'integer' }, de: { type: 'string' }, gateway_msg_id: { type: 'string' } }), ...errorResponses },
    },
    handler: async (req) => {
      const b = req.body;
      const de = normalizeNumero(b.de);
      if (!de.ok) fail('INVALID_PARAMS', `de: ${de.reason}`);
      const inst = await instanceOf(b.celular_id);
      const r = await sim().receive(inst, de.numero, b.texto).catch(conflict);
      return success({ celular_id: b.celular_id, de: de.numero, gateway_msg_id: r.gatewayMsgId }, { descripcion: 'mensaje recibido' });
    },
  });

  const failResponse = { 200: okResponse({ numero: { type: 'string' }, motivo: { type: 'string' }, activo: { type: 'boolean' } }), ...errorResponses };
  app.post(API.simFail, {
    schema: {
      operationId: 'adminSimProgramarFallo',
      tags,
      security,
      summary: 'Every later send to this number fails permanently (activo=false clears the rule)',
      body: Type.Object({
        numero: Type.String({ minLength: 1, maxLength: FIELD_LIMITS.numero }),
        motivo: Type.Optional(Type.String({ maxLength: FIELD_LIMITS.motivo })),
        activo: Type.Optional(Type.Boolean({ default: true })),
      }),
      response: failResponse,
    },
    handler: async (req) => {
      const b = req.body;
      const activo = b.activo ?? true;
      const n = normalizeNumero(b.numero);
      if (!n.ok) fail('INVALID_PARAMS', `numero: ${n.reason}`);
      const motivo = b.motivo?.trim() || 'recipient is not on the network';
      if (activo) await sim().failNumber(n.numero, motivo);
      else await sim().clearFail(n.numero);
      return success({ numero: n.numero, motivo, activo }, { descripcion: activo ? 'fallo programado' : 'fallo retirado' });
    },
  });

  app.get(API.simFail, {
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
