import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';

/**
 * The panel's static files, served from the package itself (nothing from a
 * CDN): our stylesheet and script under assets/panel/, and htmx from its npm
 * package. Read once at start, kept in memory with an ETag; pages link them
 * with the file's hash, so a browser may keep them for a year.
 */
const require = createRequire(import.meta.url);
const OWN = (name: string) => fileURLToPath(new URL(`../../../assets/panel/${name}`, import.meta.url));

const FILES: Record<string, { path: () => string; type: string }> = {
  'panel.css': { path: () => OWN('panel.css'), type: 'text/css; charset=utf-8' },
  'panel.js': { path: () => OWN('panel.js'), type: 'text/javascript; charset=utf-8' },
  'htmx.min.js': { path: () => require.resolve('htmx.org/dist/htmx.min.js'), type: 'text/javascript; charset=utf-8' },
};

interface Loaded {
  bytes: Buffer;
  type: string;
  hash: string;
}

let loaded: Map<string, Loaded> | null = null;
function files(): Map<string, Loaded> {
  if (loaded) return loaded;
  loaded = new Map();
  for (const [name, f] of Object.entries(FILES)) {
    const bytes = readFileSync(f.path());
    loaded.set(name, { bytes, type: f.type, hash: createHash('sha256').update(bytes).digest('base64url').slice(0, 16) });
  }
  return loaded;
}

/** The URL a page links an asset by (its hash in the query, so a new version is a new URL). */
export function assetUrl(name: keyof typeof FILES): string {
  return `/panel/assets/${name}?v=${files().get(name)!.hash}`;
}

export function registerAssets(app: FastifyInstance): void {
  app.get<{ Params: { name: string } }>('/assets/:name', { schema: { hide: true } }, async (req, reply) => {
    const f = files().get(req.params.name);
    if (!f) return reply.code(404).type('text/plain; charset=utf-8').send('not found');
    const etag = `"${f.hash}"`;
    reply.header('ETag', etag).header('Cache-Control', 'public, max-age=31536000, immutable').header('X-Content-Type-Options', 'nosniff');
    if (req.headers['if-none-match'] === etag) return reply.code(304).send();
    return reply.type(f.type).send(f.bytes);
  });
}
