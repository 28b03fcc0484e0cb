import { Readable } from 'node:stream';
import type { FastifyInstance, InjectOptions } from 'fastify';
import type { HttpTransport } from '../../src/cli/client.js';

/**
 * The CLI's HttpTransport over Fastify's `inject`: the request goes to the
 * app's routes in this process, with no socket and no port. The URL's host
 * is ignored (the app answers whatever it names); path and query are kept.
 */
export function injectTransport(app: FastifyInstance): HttpTransport {
  return async (req) => {
    const res = await app.inject({
      method: req.method as InjectOptions['method'],
      url: req.url.pathname + req.url.search,
      headers: req.headers,
      ...(req.body !== undefined ? { payload: req.body } : {}),
    });
    // Header values as a socket would give them: text (inject keeps numbers as numbers).
    const headers = Object.fromEntries(Object.entries(res.headers).map(([k, v]) => [k, typeof v === 'number' ? String(v) : v]));
    return { statusCode: res.statusCode, headers, body: Readable.from([res.rawPayload]) };
  };
}
