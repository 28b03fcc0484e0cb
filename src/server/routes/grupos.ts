import type { FastifyInstance } from 'fastify';
import type { Core } from '../../core/context.js';
import { createGrupo, deleteGrupo, editGrupo, grupoView, listGrupos } from '../../core/accounts/grupos.js';
import { API } from '../../core/api/api-routes.js';
import { GRUPO_LIMITS } from '../../core/api/limits.js';
import { clientAuth, created, principal, success } from '../http.js';
import { errorResponses, keyField, keyQuery, okResponse } from '../schemas/common.js';
import { Nullable, Type, typed } from '../schemas/typed.js';

/** A client's pools of lines (docs/pools.md): a client key manages its own; an operator acts for a client as elsewhere. */

const grupoProps = {
  id: { type: 'integer' },
  nombre: { type: 'string' },
  celulares: { type: 'array', items: { type: 'integer' }, description: "the member lines' ids" },
  conmutacion_s: { type: ['integer', 'null'], description: 'seconds a member stays disconnected before its queued messages move; null: never' },
  created_at: { type: 'integer' },
  updated_at: { type: 'integer' },
} as const;
const grupoObject = { type: 'object', properties: grupoProps } as const;

const nombre = Type.String({
  minLength: 1,
  maxLength: GRUPO_LIMITS.nombre * 4,
  description: `the pool's name, unique per client (at most ${GRUPO_LIMITS.nombre} characters)`,
});
const celulares = Type.Union(
  [
    Type.Array(Type.Integer({ minimum: 1 }), { maxItems: GRUPO_LIMITS.celulares }),
    Type.String({ maxLength: 2000, description: 'in a form: ids separated by commas' }),
  ],
  { description: "ids of the client's own lines" },
);
const conmutacion = Type.Union(
  [Type.Integer({ minimum: GRUPO_LIMITS.conmutacion_s[0], maximum: GRUPO_LIMITS.conmutacion_s[1] }), Type.String({ maxLength: 12 }), Type.Null()],
  { description: 'seconds a line stays disconnected before its queued messages move to another line of the pool; null (or "" in a form): never' },
);
const ref = {
  id: Type.Optional(Type.Integer({ minimum: 1, description: "the pool's id (or name it with grupo)" })),
  grupo: Type.Optional(Type.String({ minLength: 1, maxLength: GRUPO_LIMITS.nombre * 4, description: "the pool's current name (instead of id)" })),
};

export default async function grupoRoutes(
  fastify: FastifyInstance,
  { core }: { core: Pick<Core, 'store' | 'counters' | 'clock' | 'config' | 'credentials' | 'signals'> },
) {
  const app = typed(fastify);
  const auth = clientAuth(core);
  const security = [{ bearer: [] }];
  const tags = ['grupos'];

  app.get(API.grupos, {
    preValidation: auth,
    schema: {
      operationId: 'listarGrupos',
      tags,
      summary: "The client's pools of lines",
      security,
      querystring: Type.Object({ key: Type.Optional(keyQuery) }),
      response: { 200: okResponse({ grupos: { type: 'array', items: grupoObject } }), ...errorResponses },
    },
    handler: async (req) => success({ grupos: (await listGrupos(core, principal(req))).map(grupoView) }),
  });

  app.post(API.grupoCrear, {
    preValidation: auth,
    schema: {
      operationId: 'crearGrupo',
      tags,
      summary: 'Create a pool of lines (client key)',
      security,
      body: Type.Object({ key: Type.Optional(keyField), nombre, celulares, conmutacion_s: Type.Optional(conmutacion) }),
      response: { 201: okResponse({ grupo: grupoObject }), ...errorResponses },
    },
    handler: async (req, reply) => {
      const g = await createGrupo(core, principal(req), req.body);
      return created(reply, { grupo: grupoView(g) }, { descripcion: 'grupo creado' });
    },
  });

  app.post(API.grupoEditar, {
    preValidation: auth,
    schema: {
      operationId: 'editarGrupo',
      tags,
      summary: 'Edit a pool: its name, its lines (replaced), its failover wait (client key)',
      security,
      querystring: Type.Object({ ...ref, key: Type.Optional(keyQuery) }),
      body: Nullable(
        Type.Object({
          key: Type.Optional(keyField),
          ...ref,
          nombre: Type.Optional(nombre),
          celulares: Type.Optional(celulares),
          conmutacion_s: Type.Optional(conmutacion),
        }),
      ),
      response: { 200: okResponse({ grupo: grupoObject }), ...errorResponses },
    },
    handler: async (req) => {
      const b = req.body ?? {};
      const g = await editGrupo(core, principal(req), { id: req.query.id ?? b.id, grupo: req.query.grupo ?? b.grupo }, b);
      return success({ grupo: grupoView(g) }, { descripcion: 'grupo actualizado' });
    },
  });

  app.post(API.grupoEliminar, {
    preValidation: auth,
    schema: {
      operationId: 'eliminarGrupo',
      tags,
      summary: 'Delete a pool (its lines stay; client key)',
      security,
      querystring: Type.Object({ ...ref, key: Type.Optional(keyQuery) }),
      body: Nullable(Type.Object({ key: Type.Optional(keyField), ...ref })),
      response: { 200: okResponse({ id: { type: 'integer' }, nombre: { type: 'string' }, eliminado: { type: 'boolean' } }), ...errorResponses },
    },
    handler: async (req) => {
      const b = req.body ?? {};
      return success(await deleteGrupo(core, principal(req), { id: req.query.id ?? b.id, grupo: req.query.grupo ?? b.grupo }), {
        descripcion: 'grupo eliminado',
      });
    },
  });
}
