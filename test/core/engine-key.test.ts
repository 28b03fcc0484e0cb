import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  authAad,
  ENGINE_KEY_FILE,
  EngineKeyError,
  engineCipherOf,
  loadEngineCipher,
  newEngineKeyText,
  SealedValueRefused,
} from '../../src/core/engine/engine-key.js';
import { tempDir } from '../helpers/server.js';
import { rmSync } from 'node:fs';

const dirs: string[] = [];
const dir = () => {
  const d = tempDir('pasarela-engine-key-');
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const POSIX = process.platform !== 'win32';

describe('the engine key (D-116)', () => {
  it('seals and opens a value bound to its row; each seal has its own nonce; the plaintext is not in the sealed bytes', () => {
    const c = engineCipherOf(Buffer.alloc(32, 7));
    const aad = authAad('pasarela-1', 'session', 'a@s.whatsapp.net');
    const plain = Buffer.from('private key material 0123456789');
    const one = c.seal(aad, plain);
    const two = c.seal(aad, plain);
    expect(one.equals(two)).toBe(false);
    expect(one.includes(plain)).toBe(false);
    expect(c.open(aad, one).equals(plain)).toBe(true);
    // Moved to another line, kind or id: refused.
    for (const other of [
      authAad('pasarela-2', 'session', 'a@s.whatsapp.net'),
      authAad('pasarela-1', 'pre-key', 'a@s.whatsapp.net'),
      authAad('pasarela-1', 'session', 'b'),
    ])
      expect(() => c.open(other, one)).toThrow(/does not open with this key \(altered, or moved from another row\)/);
    // Altered: refused.
    const bent = Buffer.from(one);
    bent[bent.length - 20]! ^= 1;
    expect(() => c.open(aad, bent)).toThrow(SealedValueRefused);
  });

  it('a value sealed with another key is refused, naming both keys by their ids, never the keys', () => {
    const k1 = Buffer.alloc(32, 1);
    const k2 = Buffer.alloc(32, 2);
    const a = engineCipherOf(k1);
    const b = engineCipherOf(k2);
    const sealed = a.seal('x', Buffer.from('v'));
    let msg = '';
    try {
      b.open('x', sealed);
    } catch (err) {
      msg = (err as Error).message;
    }
    expect(msg).toBe(`it was sealed with another key (id ${a.keyId}; this node's key is ${b.keyId})`);
    expect(msg).not.toContain(k1.toString('base64'));
    expect(msg).not.toContain(k1.toString('hex'));
    // The cipher object shows no key when printed or serialised.
    expect(JSON.stringify(a)).not.toContain(k1.toString('hex').slice(0, 8));
    expect(Object.values(a).some((v) => Buffer.isBuffer(v))).toBe(false);
  });

  it('makes <data dir>/engine.key on first use (mode 0600, versioned), and reads the same key after', async () => {
    const d = dir();
    const first = await loadEngineCipher({ dataDir: d });
    expect(first.created).toBe(true);
    expect(first.keyFile).toBe(join(d, ENGINE_KEY_FILE));
    const text = readFileSync(first.keyFile, 'utf8');
    expect(text).toMatch(/^pasarela-engine-key\/1 [A-Za-z0-9+/]{43}=\n$/);
    if (POSIX) expect(statSync(first.keyFile).mode & 0o777).toBe(0o600);
    const again = await loadEngineCipher({ dataDir: d });
    expect(again.created).toBe(false);
    expect(again.keyId).toBe(first.keyId);
    expect(again.open('r', first.seal('r', Buffer.from('same key'))).toString()).toBe('same key');
  });

  it('a key file named by a setting is used as it is, the flag before the variable; never made when missing', async () => {
    const d = dir();
    const shared = join(d, 'shared.key');
    writeFileSync(shared, newEngineKeyText(), { mode: 0o600 });
    const byFlag = await loadEngineCipher({ dataDir: dir(), keyFile: shared, keyEnv: join(d, 'nope.key') });
    const byEnv = await loadEngineCipher({ dataDir: dir(), keyEnv: shared });
    expect(byFlag.keyId).toBe(byEnv.keyId);
    expect(byFlag.keyFile).toBe(shared);
    const missing = join(d, 'missing.key');
    await expect(loadEngineCipher({ dataDir: d, keyFile: missing })).rejects.toThrow(
      `the engine key file ${missing} (--engine-key-file) does not exist: copy the engine.key of the node that sealed the state (its data directory), the same file on every node (a first node makes it as it starts: start the others once it listens)`,
    );
    await expect(loadEngineCipher({ dataDir: d, keyEnv: missing })).rejects.toThrow('(PASARELA_ENGINE_KEY_FILE) does not exist');
  });

  it.runIf(POSIX)('a key file others may read is refused with what to do; 0400 is fine', async () => {
    const d = dir();
    const file = join(d, 'k.key');
    writeFileSync(file, newEngineKeyText());
    chmodSync(file, 0o644);
    await expect(loadEngineCipher({ dataDir: d, keyFile: file })).rejects.toThrow(
      `the engine key file ${file} (--engine-key-file) is open to others (mode 644): it unlocks every linked line; run chmod 600 ${file} and start again`,
    );
    chmodSync(file, 0o640);
    await expect(loadEngineCipher({ dataDir: d, keyFile: file })).rejects.toThrow(EngineKeyError);
    chmodSync(file, 0o400);
    await expect(loadEngineCipher({ dataDir: d, keyFile: file })).resolves.toBeDefined();
    // The default file too.
    await loadEngineCipher({ dataDir: d });
    chmodSync(join(d, ENGINE_KEY_FILE), 0o604);
    await expect(loadEngineCipher({ dataDir: d })).rejects.toThrow('(the data directory) is open to others (mode 604)');
  });

  it('a file that is not a key, or of a later format, is refused without showing its content', async () => {
    const d = dir();
    const file = join(d, 'k.key');
    writeFileSync(file, 'secret-looking garbage\n', { mode: 0o600 });
    const err = await loadEngineCipher({ dataDir: d, keyFile: file }).catch((e: unknown) => e as Error);
    expect((err as Error).message).toBe(
      `the engine key file ${file} (--engine-key-file) is not a key pasarela wrote (one line: pasarela-engine-key/1 and 32 bytes in base64)`,
    );
    writeFileSync(file, newEngineKeyText().replace('/1 ', '/2 '), { mode: 0o600 });
    await expect(loadEngineCipher({ dataDir: d, keyFile: file })).rejects.toThrow('is of format 2; this version reads format 1');
  });
});
