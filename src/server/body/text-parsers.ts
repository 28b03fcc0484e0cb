import { isUtf8 } from 'node:buffer';
import type { FastifyInstance } from 'fastify';
import { bodyCharset, checkFieldsWellFormed } from '../../core/sending/exact-text.js';
import { parseForm } from './form-reader.js';
import { refuseNotUtf8 } from './json-reader.js';

/**
 * The JSON and form parsers of every route without a base64 file (those
 * stream their bodies: media-parser.ts), and the query string: each reads
 * text exactly as sent, in the charset declared, or refuses it
 * (core/sending/exact-text.ts), where Fastify's own parsers would put U+FFFD for
 * bad bytes or keep a broken escape as it was sent.
 */
export function installTextParsers(app: FastifyInstance): void {
  const jsonParser = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) => {
    try {
      bodyCharset(req.headers['content-type'], 'json');
      const bytes = body as Buffer;
      if (!isUtf8(bytes)) refuseNotUtf8(bytes);
      const text = bytes.toString('utf8');
      // Many clients POST `?id=N` with a JSON content type and no body: an empty request, not malformed JSON.
      if (text.trim() === '') return done(null, undefined);
      // Fastify's parser also refuses prototype poisoning.
      // Callback style: its outcome reaches done(), whatever it returns.
      void jsonParser(req, text, (err, value) => {
        if (err) return done(err);
        try {
          checkFieldsWellFormed(value);
        } catch (e) {
          return done(e as Error);
        }
        done(null, value);
      });
    } catch (err) {
      done(err as Error);
    }
  });
  // No parser-level limit: each route's bodyLimit applies to form bodies as to JSON.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'buffer' }, (req, body, done) => {
    try {
      done(null, parseForm(body as Buffer, bodyCharset(req.headers['content-type'], 'form')));
    } catch (err) {
      done(err as Error);
    }
  });
  // Node hands the request line over as latin1, one character per byte: the bytes as sent.
  app.addHook('onRequest', async (req) => {
    const q = req.url.indexOf('?');
    if (q >= 0) req.query = parseForm(Buffer.from(req.url.slice(q + 1), 'latin1'), 'utf-8', 'query parameter ');
  });
}
