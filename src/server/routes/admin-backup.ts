import { randomUUID, createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance } from 'fastify';
import { API } from '../../core/api/api-routes.js';
import type { Core } from '../../core/context.js';
import { diskFull, fail } from '../../core/api/errors.js';
import { operatorAuth } from '../http.js';
import { errorResponses } from '../schemas/common.js';

/** Headers of a backup's answer: the SHA-256 (hex) of the body and the schema version of the copy. */
export const BACKUP_SHA256_HEADER = 'x-pasarela-sha256';
export const BACKUP_SCHEMA_HEADER = 'x-pasarela-schema';

/**
 * `POST /admin/backup`: a consistent copy of the embedded SQLite store, made
 * with SQLite's online backup API while the server goes on serving, written
 * to a file in `<data-dir>/tmp` and streamed to the operator. The file goes
 * when the answer ends or the client goes away (a start-up sweep of tmp/
 * removes one a crash left). One backup at a time; on PostgreSQL the
 * operator uses pg_dump.
 */
export default async function adminBackupRoutes(
  app: FastifyInstance,
  { core, tmpDir }: { core: Pick<Core, 'store' | 'counters' | 'clock' | 'config'>; tmpDir: string },
) {
  app.addHook('preValidation', operatorAuth(core));
  let running = false;

  app.post(API.adminBackup, {
    schema: {
      operationId: 'adminCrearBackup',
      tags: ['operador'],
      security: [{ operator: [] }],
      summary:
        'A consistent copy of the SQLite store, taken while serving (application/octet-stream; SHA-256 in X-Pasarela-Sha256, schema version in X-Pasarela-Schema)',
      response: {
        200: { description: 'the SQLite database file', type: 'string', format: 'binary' },
        ...errorResponses,
      },
    },
    handler: async (req, reply) => {
      const store = core.store;
      if (!store.backupTo) {
        fail(
          'CONFLICT',
          `this server keeps its data in ${store.caps.label}: back it up with pg_dump; pasarela admin backup copies the embedded SQLite store only`,
        );
      }
      if (running) fail('CONFLICT', 'a backup is already running; retry when it ends', { retryAfter: 5 });
      running = true;
      const file = join(tmpDir, `backup-${randomUUID()}.db`);
      let released = false;
      let streaming = false;
      let gone = false;
      const release = async () => {
        if (released) return;
        released = true;
        await unlink(file).catch(() => {});
        running = false;
      };
      // Registered first: a client that leaves during the copy is seen once it ends.
      reply.raw.once('close', () => {
        gone = true;
        if (streaming) void release();
      });
      let schemaVersion: number;
      let sha256: string;
      let size: number;
      try {
        ({ schemaVersion } = await store.backupTo(file));
        const hash = createHash('sha256');
        await pipeline(createReadStream(file), hash);
        sha256 = hash.digest('hex');
        size = (await stat(file)).size;
      } catch (err) {
        await release();
        // The copy did not fit beside the store: 507 and why, not a 500 (the store itself is untouched).
        throw diskFull(err, `the backup copy in ${tmpDir}`);
      }
      if (gone) {
        await release();
        return reply;
      }
      streaming = true;
      req.log.info({ bytes: size, schema: schemaVersion }, 'backup taken');
      const body = createReadStream(file);
      body.on('error', () => void release());
      return reply
        .header('content-type', 'application/octet-stream')
        .header('content-length', String(size))
        .header('content-disposition', 'attachment; filename="pasarela-backup.db"')
        .header('cache-control', 'no-store')
        .header(BACKUP_SHA256_HEADER, sha256)
        .header(BACKUP_SCHEMA_HEADER, String(schemaVersion))
        .send(body);
    },
  });
}
