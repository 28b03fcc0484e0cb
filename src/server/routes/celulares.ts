import type { FastifyInstance } from 'fastify';
import type { Core } from '../../core/context.js';
import { celularCodigo, celularQr, createCelular, deleteCelular, editCelular, vincular } from '../../core/accounts/celulares.js';
import { celularStatusWithProfile, showCelularWithProfile } from '../../core/accounts/session-actions.js';
import { API } from '../../core/api/api-routes.js';
import { fail } from '../../core/api/errors.js';
import { CELULAR_LIMITS, FIELD_LIMITS } from '../../core/api/limits.js';
import { celularView, viewAt } from '../../core/api/views.js';
import { boolish, clientAuth, created, principal, success } from '../http.js';
import { qrPngDataUri } from '../../core/accounts/qr-image.js';
import {
  aliasSchema,
  celularEditBody,
  codigoProps,
  errorResponses,
  idQuery,
  idQueryProps,
  keyField,
  lineProtection,
  okResponse,
  qrProps,
} from '../schemas/common.js';
import { motorNodoProp, perfilProp } from '../schemas/session.js';
import { Flag, Nullable, Type, typed } from '../schemas/typed.js';

/** The body of a POST that takes the celular `id` in the query string: a form or JSON body may carry it (and the key) instead. */
const idBodyProps = {
  key: Type.Optional(keyField),
  id: Type.Optional(Type.Integer({ minimum: 1, description: 'celular id, when the query string has none' })),
};
export const idBody = Nullable(Type.Object(idBodyProps));

/** The celular id of a request: the query string's, else the body's; one is required. */
export const idOf = (query: { id?: number }, body?: { id?: number } | null): number =>
  query.id ?? body?.id ?? fail('INVALID_PARAMS', 'id: a celular id (positive integer) is required');

const imagenFlag = Flag('1/true: also answer qr_imagen, the QR as a PNG data URI; 0 or absent: no image');
const qrQuery = Type.Object({ ...idQueryProps, imagen: Type.Optional(imagenFlag) });
const qrBody = Nullable(Type.Object({ ...idBodyProps, imagen: Type.Optional(imagenFlag) }));
const qrImagenProp = {
  type: 'string',
  description: 'Only with imagen=1: the QR as a PNG data URI (data:image/png;base64,...); "" when there is nothing to scan (qr empty).',
} as const;

/** The celular endpoints, with their hyphenated aliases (docs/design.md §1: older client code uses them). */
export default async function celularRoutes(
  fastify: FastifyInstance,
  { core }: { core: Pick<Core, 'store' | 'counters' | 'gateway' | 'clock' | 'bus' | 'config' | 'signals' | 'credentials'> },
) {
  const app = typed(fastify);
  const auth = clientAuth(core);
  const security = [{ bearer: [] }];
  const tags = ['celulares'];

  app.get(API.celular, {
    preValidation: auth,
    schema: {
      operationId: 'obtenerCelular',
      tags,
      summary: 'One celular',
      security,
      querystring: idQuery,
      response: { 200: okResponse({ celular: { $ref: 'Celular#' }, perfil: perfilProp }), ...errorResponses },
    },
    handler: async (req) => {
      const r = await showCelularWithProfile(core, principal(req), idOf(req.query));
      return success(r, { saldo: r.celular.saldo_actual });
    },
  });

  const createSchema = {
    operationId: 'crearCelular',
    tags,
    summary: 'Register a celular (estado desconectado); its api_key and gateway_token are returned once',
    security,
    body: Type.Object({
      key: Type.Optional(keyField),
      numero: Type.String({ minLength: 1, maxLength: FIELD_LIMITS.numero, description: 'country code first; +, spaces and punctuation are accepted' }),
      nombre_interno: Type.Optional(Nullable(Type.String({ maxLength: CELULAR_LIMITS.nombre_interno }))),
      ...lineProtection,
    }),
    response: {
      201: okResponse({
        celular_id: { type: 'integer' },
        estado: { type: 'string' },
        celular: { $ref: 'Celular#' },
        api_key: { type: 'string', description: 'WA_<celular_id>_<secret>; shown only now' },
        gateway_token: { type: 'string', description: '64 hex; a credential for the legacy endpoint; shown only now' },
      }),
      ...errorResponses,
    },
  };
  const createAliases: Record<string, string> = {
    '/api/celular-crear.php': 'crearCelularAliasGuion',
    '/api/admin-celular-crear.php': 'crearCelularAliasAdmin',
  };
  for (const url of [API.celularCrear, ...Object.keys(createAliases)]) {
    app.post(url, {
      preValidation: auth,
      schema: url === API.celularCrear ? createSchema : aliasSchema(createSchema, createAliases[url]!, API.celularCrear),
      handler: async (req, reply) => {
        const { freno, ...body } = req.body;
        const input = { ...body, ...(freno === undefined ? {} : { freno: boolish(freno, 'freno') }) };
        const r = await createCelular(core, principal(req), input, (err) =>
          req.log.warn({ err }, 'gateway instance creation failed; it will be created when the line is linked'),
        );
        return created(
          reply,
          { celular_id: r.celular.id, estado: r.celular.estado, celular: r.view, api_key: r.api_key, gateway_token: r.gateway_token },
          { descripcion: 'celular creado', saldo: r.celular.saldo_actual },
        );
      },
    });
  }

  app.post(API.celularEditar, {
    preValidation: auth,
    schema: {
      operationId: 'editarCelular',
      tags,
      summary: 'Edit a celular (all fields optional; estado needs the client key)',
      security,
      querystring: idQuery,
      body: celularEditBody,
      response: { 200: okResponse({ celular: { $ref: 'Celular#' } }), ...errorResponses },
    },
    handler: async (req) => {
      const { key: _k, id: _i, freno, ...edit } = req.body;
      const row = await editCelular(core, principal(req), idOf(req.query, req.body), {
        ...edit,
        ...(freno === undefined ? {} : { freno: boolish(freno, 'freno') }),
      });
      return success({ celular: celularView(row, viewAt(core)) }, { descripcion: 'celular actualizado', saldo: row.saldo_actual });
    },
  });

  app.post(API.celularEliminar, {
    preValidation: auth,
    schema: {
      operationId: 'eliminarCelular',
      tags,
      summary: 'Delete a celular (hard delete, audited; client key only)',
      security,
      querystring: idQuery,
      body: idBody,
      response: {
        200: okResponse({ celular_id: { type: 'integer' }, numero: { type: 'string' }, eliminado: { type: 'boolean' } }),
        ...errorResponses,
      },
    },
    handler: async (req) => {
      const r = await deleteCelular(core, principal(req), idOf(req.query, req.body), (err) =>
        req.log.warn({ err }, 'gateway instance removal failed; the celular is deleted'),
      );
      return success(r, { descripcion: 'celular eliminado' });
    },
  });

  app.post(API.celularQr, {
    preValidation: auth,
    schema: {
      operationId: 'obtenerQrCelular',
      tags,
      summary: 'QR to link the celular (creates the gateway session if none)',
      description:
        'The default answer is the QR content (`qr`) and the session `status`. With `imagen=1` (query or body) the answer also has ' +
        '`qr_imagen`, the same QR as a PNG data URI (`data:image/png;base64,...`), or "" when there is nothing to scan (already connected, ' +
        'or the gateway still starting the session).',
      security,
      querystring: qrQuery,
      body: qrBody,
      response: { 200: okResponse({ ...qrProps, qr_imagen: qrImagenProp }), ...errorResponses },
    },
    handler: async (req) => {
      const imagen = boolish(req.query.imagen ?? req.body?.imagen, 'imagen');
      const r = await celularQr(core, principal(req), idOf(req.query, req.body));
      return success(imagen ? { ...r, qr_imagen: await qrPngDataUri('qr' in r ? r.qr : '') } : r);
    },
  });

  app.post(API.celularCodigo, {
    preValidation: auth,
    schema: {
      operationId: 'obtenerCodigoCelular',
      tags,
      summary: 'Pairing code to link the celular from the phone, instead of scanning a QR (creates the gateway session if none)',
      security,
      querystring: idQuery,
      body: idBody,
      response: { 200: okResponse(codigoProps), ...errorResponses },
    },
    handler: async (req) => success(await celularCodigo(core, principal(req), idOf(req.query, req.body))),
  });

  app.get(API.celularStatus, {
    preValidation: auth,
    schema: {
      operationId: 'obtenerEstadoCelular',
      tags,
      summary: 'Session status, refreshed from the gateway',
      security,
      querystring: idQuery,
      response: {
        200: okResponse({
          celular_id: { type: 'integer' },
          gateway_instancia: { type: 'string' },
          status: { type: 'string' },
          estado: { type: 'string' },
          status_actualizado_desde_gateway: { type: 'boolean' },
          ultimo_check: { type: 'string', format: 'date-time' },
          perfil: perfilProp,
          motor_nodo: motorNodoProp,
        }),
        ...errorResponses,
      },
    },
    handler: async (req) => success(await celularStatusWithProfile(core, principal(req), idOf(req.query))),
  });

  const vincularBody = Type.Object({
    key: Type.Optional(keyField),
    numero: Type.String({ minLength: 1, maxLength: FIELD_LIMITS.numero }),
    nombre: Type.Optional(Nullable(Type.String({ maxLength: CELULAR_LIMITS.nombre_interno, description: 'internal alias' }))),
  });
  const registered = {
    numero: { type: 'string' },
    creado: { type: 'boolean', description: 'true when this call registered the celular' },
    api_key: { type: 'string', description: 'only when creado; shown once' },
    gateway_token: { type: 'string', description: 'only when creado; shown once' },
    aviso: { type: 'string', description: 'only when the celular was registered but the gateway could not start the link: ask again' },
  };
  const linkRoutes = [
    { method: 'qr', operationId: 'vincularCelularQr', urls: [API.celularVincularQr, '/api/celular-vincular-qr.php'], props: qrProps, what: 'QR' },
    {
      method: 'codigo',
      operationId: 'vincularCelularCodigo',
      urls: [API.celularVincularCodigo, '/api/celular-vincular-codigo.php'],
      props: codigoProps,
      what: 'pairing code',
    },
  ] as const;
  for (const { method, operationId, urls, props, what } of linkRoutes) {
    const schema = {
      operationId,
      tags,
      summary: `Register a number (or reuse the client's line with it) and return its ${what}; client key only`,
      security,
      body: vincularBody,
      response: { 200: okResponse({ ...props, ...registered }), ...errorResponses },
    };
    for (const url of urls) {
      app.post(url, {
        preValidation: auth,
        schema: url === urls[0] ? schema : aliasSchema(schema, `${operationId}AliasGuion`, urls[0]),
        handler: async (req) => {
          const r = await vincular(core, principal(req), req.body, method, (err) =>
            req.log.warn({ err }, 'gateway instance creation failed; it will be created when the line is linked'),
          );
          return success(r);
        },
      });
    }
  }
}
