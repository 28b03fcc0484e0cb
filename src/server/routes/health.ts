import type { FastifyInstance } from 'fastify';
import { API } from '../../core/api/api-routes.js';
import type { Core } from '../../core/context.js';
import { iso } from '../../core/time/clock.js';
import { AppError, errorBody } from '../../core/api/errors.js';
import type { LineHealth } from '../../core/accounts/line-health.js';
import type { NodePresence } from '../../core/nodes/node-presence.js';
import { VERSION } from '../../version.js';
import { success } from '../http.js';
import { errorResponses, okResponse } from '../schemas/common.js';

/** Liveness and readiness without credentials: the process answers and the database responds. */
export default async function healthRoutes(
  app: FastifyInstance,
  {
    core,
    health,
    node,
    draining,
  }: {
    core: Pick<Core, 'store' | 'counters' | 'gateway' | 'clock'>;
    health?: LineHealth;
    node?: Pick<NodePresence, 'presentNodes'>;
    draining?: () => string | null;
  },
) {
  app.get(API.health, {
    schema: {
      operationId: 'consultarSalud',
      tags: ['servicio'],
      summary: 'Health check',
      response: {
        200: okResponse({
          status: { type: 'string' },
          version: { type: 'string' },
          gateway: { type: 'string' },
          simulado: { type: 'boolean' },
          store: { type: 'string' },
          counters: {
            type: 'string',
            description:
              "what holds duplicate protection and the auth throttle: 'memory' (this process), 'redis', or 'redis (unreachable: memory)' while Redis does not answer",
          },
          gateway_alcanzable: {
            type: 'boolean',
            nullable: true,
            description:
              "from the last line health check: false when no line's session could be read (or, without lines, the gateway did not answer); null before the first check",
          },
          gateway_verificado: { type: 'string', format: 'date-time', nullable: true, description: 'when the last line health check ended' },
          lineas_verificadas: { type: 'integer', description: 'lines in the last check' },
          lineas_fallidas: { type: 'integer', description: 'lines whose session could not be read in the last check' },
          nodos_vivos: {
            type: 'integer',
            description:
              'serve processes of this store that beat within the takeover margin, 10 s (1 on SQLite); a stopped or killed node drops out within that',
          },
        }),
        ...errorResponses,
        503: {
          description: 'the store cannot take writes (a full disk, an I/O error); the service is not ready',
          type: 'object',
          properties: {
            ok: { type: 'boolean' },
            error: { type: 'string' },
            api_codigo: { type: 'integer' },
            api_texto: { type: 'string' },
            api_descripcion: { type: 'string' },
            saldo: { type: 'integer', nullable: true },
            status: { type: 'string', enum: ['store_unavailable'] },
            store: { type: 'string' },
            store_error: { type: 'string', description: 'what failed, naming the store' },
            store_error_desde: { type: 'string', format: 'date-time', description: 'when a write first failed' },
          },
        },
      },
    },
    handler: async (_req, reply) => {
      await core.store.getCliente(0); // a real round trip to the store
      const writes = await core.store.writeHealth();
      if (!writes.writable) {
        // 503 rather than the requests' 507: what a load balancer takes for "not ready".
        const err = new AppError('STORE_UNAVAILABLE', writes.reason);
        return reply.code(503).send({
          ...errorBody(err),
          status: 'store_unavailable',
          store: core.store.caps.name,
          store_error: writes.reason,
          store_error_desde: iso(writes.since),
        });
      }
      return success({
        status: 'ok',
        version: VERSION,
        gateway: core.gateway.name,
        simulado: core.gateway.simulated,
        store: core.store.caps.name,
        counters: core.counters.backend(),
        gateway_alcanzable: health?.state.ok ?? null,
        gateway_verificado: health?.state.checkedAt ? iso(health.state.checkedAt) : null,
        lineas_verificadas: health?.state.lineas ?? 0,
        lineas_fallidas: health?.state.fallidas ?? 0,
        // Present (a beat within the takeover margin), not merely holding its leases, which a dead node does for minutes.
        nodos_vivos: node ? (await node.presentNodes()).length : (await core.store.nodes(core.clock.now())).filter((n) => n.alive).length,
      });
    },
  });

  const motivo = {
    type: 'object',
    properties: {
      codigo: { type: 'string', description: 'store_unavailable, draining (not ready); gateway_unreachable (degraded, still ready)' },
      detalle: { type: 'string' },
    },
  };
  const readyShape = (description: string, ok: boolean) => ({
    description,
    type: 'object',
    properties: {
      ok: { type: 'boolean', enum: [ok] },
      listo: { type: 'boolean', enum: [ok] },
      draining: { type: 'boolean', description: 'the node got SIGTERM/SIGINT and is stopping' },
      store: { type: 'string' },
      gateway: { type: 'string' },
      gateway_alcanzable: { type: 'boolean', nullable: true, description: 'as in /health: null before the first line health check' },
      motivos: { type: 'array', items: motivo, description: 'why the node is not ready (empty when ready)' },
      degradado: { type: 'array', items: motivo, description: 'what is wrong without taking the node out of rotation (a gateway that does not answer)' },
    },
  });
  /**
   * Readiness: whether a load balancer should send this node requests. Not
   * ready (503) while the store takes no writes or the node is draining; a
   * gateway that does not answer is reported under `degradado` but leaves the
   * node ready, since every node shares it and sends are still accepted and
   * queued (docs/decisions.md D-06).
   */
  app.get(API.ready, {
    schema: {
      operationId: 'consultarPreparacion',
      tags: ['servicio'],
      summary: 'Readiness check',
      description:
        '200 when this node should take requests; 503 listing the reasons (`motivos`) when the store takes no writes or the node is draining. A gateway that does not answer is reported in `degradado` and leaves the node ready.',
      response: {
        200: readyShape('ready (possibly degraded)', true),
        503: readyShape('not ready: see motivos', false),
      },
    },
    handler: async (_req, reply) => {
      const motivos: Array<{ codigo: string; detalle: string }> = [];
      const degradado: Array<{ codigo: string; detalle: string }> = [];
      const stopping = draining?.() ?? null;
      if (stopping) motivos.push({ codigo: 'draining', detalle: stopping });
      try {
        await core.store.getCliente(0);
        const writes = await core.store.writeHealth();
        if (!writes.writable) motivos.push({ codigo: 'store_unavailable', detalle: writes.reason });
      } catch (err) {
        motivos.push({
          codigo: 'store_unavailable',
          detalle: `the store ${core.store.caps.name} does not answer: ${err instanceof Error ? err.message : String(err)}`,
        });
      }
      if (health?.state.ok === false) {
        // Counts rather than the gateway's error text, which may name its address: this route has no credentials.
        const { lineas, fallidas, checkedAt } = health.state;
        const when = checkedAt ? ` (checked ${iso(checkedAt)})` : '';
        degradado.push({
          codigo: 'gateway_unreachable',
          detalle:
            lineas > 0
              ? `the gateway ${core.gateway.name} could not read ${fallidas} of ${lineas} lines' sessions${when}`
              : `the gateway ${core.gateway.name} did not answer${when}`,
        });
      }
      const listo = motivos.length === 0;
      return reply.code(listo ? 200 : 503).send({
        ok: listo,
        listo,
        draining: stopping !== null,
        store: core.store.caps.name,
        gateway: core.gateway.name,
        gateway_alcanzable: health?.state.ok ?? null,
        motivos,
        degradado,
      });
    },
  });
}
