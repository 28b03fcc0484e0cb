import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError, fail } from '../../core/api/errors.js';
import { bodyCharset } from '../../core/sending/exact-text.js';
import type { TempFiles } from '../../core/media/media.js';
import type { MediaFile } from '../../core/sending/send.js';
import { FIELD_LIMITS } from './fields.js';
import { FormFieldReader } from './form-reader.js';
import { JsonFieldReader } from './json-reader.js';
import { MediaBody, type MediaBodySpec } from './media-body.js';

/**
 * JSON and form parsers for the routes of one scope whose bodies carry a
 * base64 file (route config `mediaBody`): the body is read chunk by chunk,
 * the file decoded into its temp file (`req.upload`), the other fields
 * returned as the body. A temp file no send took is removed before the
 * answer goes out.
 */

export interface MediaBodyRoute extends MediaBodySpec {
  /** Verifies a credential found in the body before the file. */
  authenticate(req: FastifyRequest, credential: string): Promise<void>;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    mediaBody?: MediaBodyRoute;
  }
  interface FastifyRequest {
    /** The decoded file of a base64 route, until a send takes it. */
    upload?: MediaFile;
  }
}

/** Hands the request's file over (the taker removes it from then on). */
export function takeUpload(req: FastifyRequest): MediaFile | undefined {
  const f = req.upload;
  req.upload = undefined;
  return f;
}

export function streamMediaBodies(scope: FastifyInstance, tmp: TempFiles): void {
  scope.removeContentTypeParser(['application/json', 'application/x-www-form-urlencoded']);
  for (const kind of ['json', 'form'] as const) {
    const type = kind === 'json' ? 'application/json' : 'application/x-www-form-urlencoded';
    scope.addContentTypeParser(type, (req: FastifyRequest, payload: Readable) => parseMediaBody(req, payload, kind, tmp));
  }
  const drop = async (req: FastifyRequest) => {
    const f = takeUpload(req);
    if (f) await tmp.remove(f.path);
  };
  scope.addHook('onSend', async (req) => drop(req));
  scope.addHook('onResponse', async (req) => drop(req));
}

async function parseMediaBody(req: FastifyRequest, payload: Readable, kind: 'json' | 'form', tmp: TempFiles): Promise<Record<string, unknown> | undefined> {
  const route = req.routeOptions.config.mediaBody;
  if (!route) throw new Error(`route ${req.routeOptions.url ?? ''} has no mediaBody config`);
  const limit = req.routeOptions.bodyLimit;
  const tooLarge = () => fail('BODY_TOO_LARGE', 'request body too large for this endpoint');
  if (Number(req.headers['content-length']) > limit) tooLarge();
  const charset = bodyCharset(req.headers['content-type'], kind);
  const body = new MediaBody(route, tmp, kind === 'json' ? 'last' : 'array', async (credential) => {
    await route.authenticate(req, credential);
    req.bodyGuard?.authenticated();
  });
  const reader = kind === 'json' ? new JsonFieldReader(body, FIELD_LIMITS) : new FormFieldReader(body, FIELD_LIMITS, charset);
  let received = 0;
  try {
    for await (const chunk of payload as AsyncIterable<Buffer>) {
      received += chunk.length;
      if (received > limit) tooLarge();
      reader.write(chunk);
      await body.flush();
    }
    // Many clients POST with a JSON content type and no body: an empty request, not malformed JSON.
    if (reader instanceof JsonFieldReader && reader.empty) return undefined;
    reader.end();
    req.upload = await body.finish();
    return body.fields;
  } catch (err) {
    await body.discard();
    // The connection failed (closed mid-body): a 400 like the other parsers give, never a 500.
    if (!(err instanceof AppError) && payload.errored === err) throw new AppError('MALFORMED_BODY', 'the body ended early (the connection was closed)');
    throw err;
  }
}
