import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { afterEach, expect, it } from 'vitest';
import { engineCipherOf } from '../../src/core/engine/engine-key.js';
import { storedAuthState } from '../../src/gateways/baileys/auth-state.js';
import { copyTable, COPIED } from '../../src/store/migrate/import.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import * as baileys from 'baileys';
import { tempDir } from '../helpers/server.js';
import { describeWith, postgres } from '../helpers/services.js';
import { openPg, pgSchema } from './adapters.js';

/**
 * `pasarela migrate` carries the engine's sealed state (D-116): the BLOB
 * rows of SQLite become PostgreSQL's bytea byte for byte, and open there
 * with the same key.
 */
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describeWith(postgres, "migrate copies the engine's state (PostgreSQL)", () => {
  it('is among the copied tables, and its rows open on the new store with the same key', async () => {
    expect(COPIED).toContain('motor_auth');
    const dir = tempDir('pasarela-engine-migrate-');
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const lite = openSqliteStore(join(dir, 'src.db'));
    cleanups.push(() => lite.close());
    const cipher = engineCipherOf(Buffer.alloc(32, 0x33));
    const from = await storedAuthState(baileys, lite, cipher, 'pasarela-4');
    from.state.creds.registered = true;
    await from.saveCreds();
    await baileys.getNextPreKeys(from.state, 50);

    const s = await pgSchema();
    cleanups.push(s.drop);
    const pg = await openPg(s.schema);
    cleanups.push(() => pg.close());
    const copied = await pg.db.tx((c) => copyTable(c, lite.db, 'motor_auth'));
    expect(copied).toBe(51);
    const to = await storedAuthState(baileys, pg, cipher, 'pasarela-4');
    expect(JSON.stringify(to.state.creds, baileys.BufferJSON.replacer)).toBe(JSON.stringify(from.state.creds, baileys.BufferJSON.replacer));
    const ids = Array.from({ length: 50 }, (_, i) => String(i + 1));
    const a = await from.state.keys.get('pre-key', ids);
    const b = await to.state.keys.get('pre-key', ids);
    for (const id of ids) expect(Buffer.from(b[id]!.private).equals(Buffer.from(a[id]!.private))).toBe(true);
  });
});
