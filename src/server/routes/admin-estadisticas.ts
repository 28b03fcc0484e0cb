import type { FastifyInstance } from 'fastify';
import { API } from '../../core/api/api-routes.js';
import { CHART_ESTADOS, estadisticas, RANGOS } from '../../core/charts/charts.js';
import type { Core } from '../../core/context.js';
import { operatorAuth, success } from '../http.js';
import { errorResponses, okResponse } from '../schemas/common.js';
import { StringEnum, Type, typed } from '../schemas/typed.js';

/** The query of a chart, shared with the panel's chart pages (an empty field is left out before it is read). */
export const estadisticasQuerystring = Type.Object({
  rango: Type.Optional(StringEnum([...RANGOS], { description: 'the last hour (bars of a minute), day (quarter hours) or week (hours); default 1h' })),
  cliente_id: Type.Optional(Type.Integer({ minimum: 1, description: "one client's sends (no samples)" })),
  celular_id: Type.Optional(Type.Integer({ minimum: 1, description: "one line's sends (no samples)" })),
});

const count = { type: 'integer' } as const;
const nullableInt = { type: 'integer', nullable: true } as const;

/** The charts' figures as JSON (operator token): the same series the panel draws (docs/decisions.md D-100, D-101). */
export default async function adminEstadisticasRoutes(fastify: FastifyInstance, { core }: { core: Pick<Core, 'store' | 'counters' | 'clock' | 'config'> }) {
  const app = typed(fastify);
  app.addHook('preValidation', operatorAuth(core));
  app.get(API.adminEstadisticas, {
    schema: {
      operationId: 'adminEstadisticas',
      tags: ['operador'],
      security: [{ operator: [] }],
      summary: "Sends per bar by estado (everyone's, a client's or a line's), and the queue and webhook samples (everyone's), over the last hour, day or week",
      querystring: estadisticasQuerystring,
      response: {
        200: okResponse({
          rango: { type: 'string', enum: [...RANGOS] },
          desde: { type: 'string', format: 'date-time', description: 'the first bar starts here' },
          hasta: { type: 'string', format: 'date-time', description: 'the last bar ends here (it holds now)' },
          paso_s: { type: 'integer', description: "a bar's width in seconds" },
          cliente_id: nullableInt,
          celular_id: nullableInt,
          envios: {
            type: 'array',
            description: 'messages created in each bar, by the estado they are in now; oldest bar first',
            items: {
              type: 'object',
              properties: { desde: { type: 'string', format: 'date-time' }, ...Object.fromEntries(CHART_ESTADOS.map((e) => [e, count])), total: count },
            },
          },
          muestras: {
            type: 'array',
            nullable: true,
            description:
              "null for a client's or a line's chart. Per bar: the queue's largest depth and oldest age a node read (null: no node sampled it), webhook attempts answered 2xx and not, latency percentiles as latency bucket bounds",
            items: {
              type: 'object',
              properties: {
                desde: { type: 'string', format: 'date-time' },
                cola: nullableInt,
                mas_antiguo_s: nullableInt,
                entregas_ok: count,
                entregas_fallidas: count,
                latencia_p50_ms: nullableInt,
                latencia_p95_ms: nullableInt,
              },
            },
          },
        }),
        ...errorResponses,
      },
    },
    handler: async (req) => success(await estadisticas(core, { kind: 'operator' }, req.query)),
  });
}
