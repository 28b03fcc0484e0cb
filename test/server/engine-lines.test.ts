import { copyFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import * as baileys from 'baileys';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeEndsLink, engineLinesAtStart, forgetEngineLine } from '../../src/core/engine/engine-lines.js';
import { ENGINE_KEY_FILE, EngineStateUnreadable, loadEngineCipher } from '../../src/core/engine/engine-key.js';
import { storedAuthState } from '../../src/gateways/baileys/auth-state.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import { Cli, expectJsonOnly } from '../cli/helpers.js';
import { expectOk } from '../helpers/expect.js';
import { injectTransport } from '../helpers/inject-http.js';
import { api, seedClient, startTestServer, tempDir, type Seeded, type TestServer } from '../helpers/server.js';

/**
 * When a line's engine state goes and when it stays (D-116): a line deleted
 * through the API, a logout from the phone, the sweep at the engine's
 * start; and `admin backup` with its restore, which keeps the state, opened
 * only with the key file of the server that sealed it.
 */
let s: TestServer;
let A: Seeded;
const dirs: string[] = [];

beforeAll(async () => {
  s = await startTestServer({}, { inject: true });
  A = await seedClient(s);
});
afterAll(async () => {
  await s?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A line's state as the engine writes it: credentials and a few keys, sealed with the data directory's key. */
async function linkedState(dataDir: string, instancia: string) {
  const cipher = await loadEngineCipher({ dataDir });
  const auth = await storedAuthState(baileys, s.core.store, cipher, instancia);
  auth.state.creds.registered = true;
  auth.state.creds.me = { id: '5215550001111:1@s.whatsapp.net' };
  await auth.saveCreds();
  await baileys.getNextPreKeys(auth.state, 5);
  return auth;
}

describe("a line's engine state: removed with the line, kept by a backup", () => {
  it('a celular deleted through the API takes its engine state with it; another line keeps its own', async () => {
    const other = await seedClient(s);
    const mine = `pasarela-${A.celularId}`;
    const theirs = `pasarela-${other.celularId}`;
    await linkedState(s.dataDir, mine);
    await linkedState(s.dataDir, theirs);
    expect(await s.core.store.authInstancias()).toEqual(expect.arrayContaining([mine, theirs]));
    expectOk(await api(s.url, 'POST', `/api/celular_eliminar.php?id=${A.celularId}`, { key: A.clientKey }));
    const left = await s.core.store.authInstancias();
    expect(left).not.toContain(mine);
    expect(left).toContain(theirs);
    expect((await s.core.store.readAuth(mine, 'pre-key', ['1', '2'])).size).toBe(0);
    A = await seedClient(s);
  });

  it('a logout from the phone (close 401) ends the link and its state is forgotten; other closes keep it for the reconnect', async () => {
    expect(closeEndsLink(401)).toBe(true);
    // Connection closed, lost, replaced, restart required, timed out, forbidden, bad session, no code.
    for (const code of [428, 408, 440, 515, 403, 500, 411, 503, undefined]) expect(closeEndsLink(code), String(code)).toBe(false);
    const instancia = `pasarela-${A.celularId}`;
    await linkedState(s.dataDir, instancia);
    await forgetEngineLine(s.core.store, instancia);
    await forgetEngineLine(s.core.store, instancia);
    expect(await s.core.store.authInstancias()).not.toContain(instancia);
  });

  it("the engine's start reconnects the lines still there and removes the state of a line deleted meanwhile", async () => {
    const here = `pasarela-${A.celularId}`;
    await linkedState(s.dataDir, here);
    // A line whose row is gone (a stop between the delete and the removal of its state).
    await linkedState(s.dataDir, 'pasarela-999999');
    const r = await engineLinesAtStart(s.core.store);
    expect(r.lines).toContain(here);
    expect(r.lines).not.toContain('pasarela-999999');
    expect(r.removed).toEqual(['pasarela-999999']);
    expect(await s.core.store.authInstancias()).not.toContain('pasarela-999999');
    expect((await engineLinesAtStart(s.core.store)).removed).toEqual([]);
  });

  it('admin backup keeps the state: restored with the key file it opens; restored without it, it refuses, naming the line', async () => {
    const instancia = `pasarela-${A.celularId}`;
    const auth = await linkedState(s.dataDir, instancia);
    const cli = new Cli(s.url, injectTransport(s.app));
    const out = tempDir('pasarela-engine-backup-');
    dirs.push(out);
    const file = join(out, 'copia.db');
    try {
      expectJsonOnly(await cli.run(['admin', 'backup', file, '--json', '--admin-token', s.adminToken]));
    } finally {
      cli.cleanup();
    }

    // Restored with the data directory's key file beside it.
    const withKey = tempDir();
    dirs.push(withKey);
    copyFileSync(file, join(withKey, 'pasarela.db'));
    copyFileSync(join(s.dataDir, ENGINE_KEY_FILE), join(withKey, ENGINE_KEY_FILE));
    const restored = openSqliteStore(join(withKey, 'pasarela.db'));
    try {
      const again = await storedAuthState(baileys, restored, await loadEngineCipher({ dataDir: withKey }), instancia);
      expect(JSON.stringify(again.state.creds, baileys.BufferJSON.replacer)).toBe(JSON.stringify(auth.state.creds, baileys.BufferJSON.replacer));
      expect(Object.keys(await again.state.keys.get('pre-key', ['1', '5']))).toEqual(['1', '5']);
    } finally {
      await restored.close();
    }

    // Restored without it: a new key is made, and the line's state does not open.
    const without = tempDir();
    dirs.push(without);
    copyFileSync(file, join(without, 'pasarela.db'));
    const bare = openSqliteStore(join(without, 'pasarela.db'));
    try {
      const err = await storedAuthState(baileys, bare, await loadEngineCipher({ dataDir: without }), instancia).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EngineStateUnreadable);
      expect((err as Error).message).toMatch(
        new RegExp(
          `^the engine's stored state of line ${instancia} cannot be read: its creds "": it was sealed with another key \\(id [0-9a-f]{8}; this node's key is [0-9a-f]{8}\\); give the key file it was sealed with, or link the line again with a new scan$`,
        ),
      );
    } finally {
      await bare.close();
    }
  });
});
