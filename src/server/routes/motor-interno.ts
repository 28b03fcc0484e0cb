import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { EngineKeeper } from '../../core/engine/engine-keeper.js';
import type { TempFiles } from '../../core/media/media.js';
import {
  answerOf,
  CALL_BYTES_HEADER,
  FORWARD_PATH,
  FORWARD_TYPE,
  LineMoved,
  MAX_CALL_BYTES,
  nodeKeyMatches,
  type EngineCall,
} from '../../gateways/baileys/forward.js';
import type { RoutedEngine } from '../../gateways/baileys/routed.js';

export interface EngineHost {
  router: RoutedEngine;
  keeper: EngineKeeper;
  /** The key between nodes (forward.ts). */
  key: string;
  tmp: TempFiles;
  /** The largest media a send carries. */
  maxFileBytes: number;
}

const OPS = new Set<EngineCall['op']>(['connect', 'pairingCode', 'status', 'logout', 'restart', 'profile', 'deleteInstance', 'send']);

/**
 * Where another node of the store hands this node a call for a line whose
 * session this node holds (D-136; the caller's side is
 * gateways/baileys/forward.ts). Not part of the API: hidden from the
 * document, and refused without the key the nodes share. A line this node
 * no longer holds is answered `moved`, and the caller looks again.
 */
export default async function engineCallRoutes(fastify: FastifyInstance, host: EngineHost) {
  fastify.addContentTypeParser(FORWARD_TYPE, (_req, payload, done) => done(null, payload));
  fastify.post(FORWARD_PATH, { schema: { hide: true }, bodyLimit: MAX_CALL_BYTES + host.maxFileBytes }, async (req: FastifyRequest, reply: FastifyReply) => {
    if (!nodeKeyMatches(host.key, req.headers.authorization)) {
      req.raw.resume();
      return reply.code(401).send({ ok: false, error: { message: 'not a node of this store', kind: 'transient' } });
    }
    const size = Number(req.headers[CALL_BYTES_HEADER]);
    const body = req.body as NodeJS.ReadableStream;
    // A malformed call is a fault between two nodes, never the network refusing the message: transient.
    if (!Number.isInteger(size) || size <= 0 || size > MAX_CALL_BYTES) {
      req.raw.resume();
      return reply.code(400).send({ ok: false, error: { message: `${CALL_BYTES_HEADER} must be 1..${MAX_CALL_BYTES}`, kind: 'transient' } });
    }
    const file = await host.tmp.scratch('send');
    let head = Buffer.alloc(0);
    let bytes = 0;
    try {
      for await (const chunk of body) {
        let c = chunk as Buffer;
        if (head.length < size) {
          const want = size - head.length;
          head = Buffer.concat([head, c.subarray(0, want)]);
          c = c.subarray(want);
        }
        if (c.length > 0) {
          bytes += c.length;
          // A stream parser gets no bodyLimit from Fastify: the file is bounded here.
          if (bytes > host.maxFileBytes) {
            req.raw.resume();
            return reply.code(413).send({ ok: false, error: { message: `the media is over ${host.maxFileBytes} bytes`, kind: 'transient' } });
          }
          await file.write(c);
        }
      }
      await file.close();
      let call: EngineCall;
      try {
        call = JSON.parse(head.toString('utf8')) as EngineCall;
      } catch {
        return reply.code(400).send({ ok: false, error: { message: 'the call is not JSON', kind: 'transient' } });
      }
      if (!OPS.has(call.op) || typeof call.instancia !== 'string' || !Array.isArray(call.args)) {
        return reply.code(400).send({ ok: false, error: { message: 'not a call of the engine', kind: 'transient' } });
      }
      try {
        if (!host.keeper.holdsHere(call.instancia)) throw new LineMoved(`this node no longer holds ${call.instancia}`);
        const value = await host.router.local(call, bytes > 0 ? file.path : undefined);
        return reply.send({ ok: true, value: value ?? null });
      } catch (err) {
        return reply.send(answerOf(err, call.op));
      }
    } finally {
      await file.discard();
    }
  });
}
