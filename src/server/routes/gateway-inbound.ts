import type { FastifyInstance } from 'fastify';
import type { Core } from '../../core/context.js';
import { fail } from '../../core/api/errors.js';
import { InboundRefused, type InboundCall } from '../../core/ports/gateway.js';
import { success } from '../http.js';
import { errorResponses, okResponse } from '../schemas/common.js';
import { Type, typed, type Static } from '../schemas/typed.js';

/** Inbound bodies carry message metadata and thumbnails, never whole media (base64 is off on the instances). */
const INBOUND_BODY_LIMIT = 5 * 1024 * 1024;

/**
 * Where the gateway reports (its webhook, registered per instance by the
 * adapter): `POST /gateway/<gateway>/<instancia>[/<event>]`. The adapter
 * authenticates the call (a per-instance secret) and maps it; the answer is
 * 200 only once every event it carried is durable, so a crash in between
 * makes the gateway deliver again instead of losing the event.
 */
export default async function gatewayInboundRoutes(fastify: FastifyInstance, { core }: { core: Pick<Core, 'gateway'> }) {
  const app = typed(fastify);
  // The raw bytes are needed to check a body signature (WAHA signs them).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: INBOUND_BODY_LIMIT }, (_req, body, done) => done(null, body));

  // Path parameters are always present; `*` only on the route with the event name appended. Hidden: no document to keep.
  const params = Type.Object({ gateway: Type.String(), instancia: Type.String(), '*': Type.Optional(Type.String()) });
  const handler = async (req: { params: Static<typeof params>; headers: InboundCall['headers']; body: unknown }) => {
    const { gateway, instancia, '*': sub } = req.params;
    const gw = core.gateway;
    if (gateway !== gw.name || !gw.handleInbound) fail('ROUTE_NOT_FOUND', `this server's gateway is ${gw.name}; it takes no events at /gateway/${gateway}`);
    try {
      const r = await gw.handleInbound({
        instancia,
        subpath: sub ? `/${sub}` : '',
        headers: req.headers,
        rawBody: Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0),
      });
      return success(r, { descripcion: 'recibido' });
    } catch (err) {
      // A per-instance secret or a body signature, not a Bearer token: its 401 carries no Bearer challenge.
      if (err instanceof InboundRefused)
        fail(err.status === 401 ? 'UNAUTHORIZED' : 'INVALID_PARAMS', err.message, err.status === 401 ? { notBearer: true } : undefined);
      throw err;
    }
  };
  // Internal: the gateway's callback, not part of the API clients use (left out of /openapi.json).
  const schema = {
    hide: true,
    tags: ['gateway'],
    summary: 'Events from the gateway (its webhook, registered on each instance by pasarela); authenticated by a per-instance secret',
    params,
    response: { 200: okResponse({ eventos: { type: 'integer', description: 'events the call carried that pasarela took' } }), ...errorResponses },
  };
  app.post('/gateway/:gateway/:instancia', { schema, bodyLimit: INBOUND_BODY_LIMIT, handler });
  app.post('/gateway/:gateway/:instancia/*', {
    schema: { ...schema, summary: 'The same, with the event name appended (Evolution "webhook by events")' },
    bodyLimit: INBOUND_BODY_LIMIT,
    handler,
  });
}
