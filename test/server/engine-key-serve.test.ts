import { chmodSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as baileys from 'baileys';
import { afterAll, describe, expect, it } from 'vitest';
import { ENGINE_KEY_FILE, loadEngineCipher, newEngineKeyText } from '../../src/core/engine/engine-key.js';
import { storedAuthState } from '../../src/gateways/baileys/auth-state.js';
import { seedClient, startTestServer, tempDir } from '../helpers/server.js';

/**
 * `serve --gateway baileys` and its key (D-117): the key file made in the
 * data directory at the first start, logged by its id only; a key file
 * others may read stops the start. The network's address is a closed
 * local port: a line the engine reconnects never leaves the machine.
 */
const dirs: string[] = [];
const dir = () => {
  const d = tempDir('pasarela-engine-serve-');
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const engine = { gateway: 'baileys' as const, baileysWsUrl: 'ws://127.0.0.1:9/ws' };

describe("serve --gateway baileys: the engine's key", () => {
  it('the first start makes <data dir>/engine.key (0600); the log names its id, never the key; a linked line of a deleted celular is swept', async () => {
    const dataDir = dir();
    const s = await startTestServer({ ...engine, dataDir });
    let keyId: string;
    try {
      const file = join(dataDir, ENGINE_KEY_FILE);
      if (process.platform !== 'win32') expect(statSync(file).mode & 0o777).toBe(0o600);
      const key = readFileSync(file, 'utf8').trim().split(' ')[1]!;
      keyId = (await loadEngineCipher({ dataDir })).keyId;
      const logs = s.logs.join('\n');
      expect(logs).toContain(keyId);
      expect(logs).not.toContain(key);
      expect(logs).not.toContain(Buffer.from(key, 'base64').toString('hex'));
      // A state the engine would keep, for a line that exists and one that does not.
      const A = await seedClient(s);
      const cipher = await loadEngineCipher({ dataDir });
      for (const instancia of [`pasarela-${A.celularId}`, 'pasarela-999999'])
        await (await storedAuthState(baileys, s.core.store, cipher, instancia)).saveCreds();
    } finally {
      await s.stop();
    }
    // The next start keeps the key and sweeps the state of the line that is gone.
    const again = await startTestServer({ ...engine, dataDir });
    try {
      expect((await loadEngineCipher({ dataDir })).keyId).toBe(keyId);
      expect(await again.core.store.authInstancias()).not.toContain('pasarela-999999');
    } finally {
      await again.stop();
    }
  });

  it('a key file others may read stops the start, saying what to do', async () => {
    const d = dir();
    const keyFile = join(d, 'shared.key');
    writeFileSync(keyFile, newEngineKeyText());
    chmodSync(keyFile, 0o644);
    await expect(startTestServer({ ...engine, dataDir: join(d, 'data'), engineKeyFile: keyFile })).rejects.toThrow(
      `the engine key file ${keyFile} (--engine-key-file) is open to others (mode 644): it unlocks every linked line; run chmod 600 ${keyFile} and start again`,
    );
  });
});
