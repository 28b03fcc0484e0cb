import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { linkSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * The key that seals the engine's authentication state (D-116): each value
 * AES-256-GCM with a random 12-byte nonce, its (instancia, kind, id) as the
 * additional data, so a row moved to another line or key does not open. The
 * key lives in a file, never in the database: `--engine-key-file` (the same
 * file on every node), else `<data dir>/engine.key`, made on first use.
 * Neither the key nor a value is ever logged or answered; errors name the
 * line and the key's id (a hash), never the key.
 */

/** Seals and opens values bound to `aad` (authAad: the row they belong to). */
export interface EngineCipher {
  seal(aad: string, plain: Buffer): Buffer;
  open(aad: string, sealed: Buffer): Buffer;
}

/** Which key a cipher holds, for the start's log line and errors: its id and file, never the key. */
export interface EngineKeyInfo {
  /** 8 hex digits of a hash of the key: the same file on two nodes gives the same id. */
  readonly keyId: string;
  /** The key file's path. */
  readonly keyFile: string;
  /** True when this call made the file (a first start). */
  readonly created: boolean;
}

export const ENGINE_KEY_FILE = 'engine.key';

/** The key file's one line: a versioned prefix, so a later format (or rotation) can tell its files apart. */
const KEY_LINE = /^pasarela-engine-key\/(\d+) ([A-Za-z0-9+/]{43}=)$/;
const KEY_VERSION = 1;
/** A sealed value: format byte, the key's id, the nonce, the ciphertext, the tag. */
const SEALED_VERSION = 1;
const ID_BYTES = 4;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const HEAD = 1 + ID_BYTES + NONCE_BYTES;

/** The key file cannot be used: its path and what to do, never its content. */
export class EngineKeyError extends Error {
  override readonly name = 'EngineKeyError';
}

/** A stored value that does not open with this key: the line named, so it alone needs a new scan. */
export class EngineStateUnreadable extends Error {
  override readonly name = 'EngineStateUnreadable';
  constructor(
    readonly instancia: string,
    readonly reason: string,
  ) {
    super(
      `the engine's stored state of line ${instancia} cannot be read: ${reason}; give the key file it was sealed with, or link the line again with a new scan`,
    );
  }
}

/** A sealed value that does not open, without the line (the caller names it: EngineStateUnreadable). */
export class SealedValueRefused extends Error {
  override readonly name = 'SealedValueRefused';
}

/** The additional data binding a value to its row: JSON, so no choice of names can make two rows' data equal. */
export function authAad(instancia: string, kind: string, id: string): string {
  return JSON.stringify([instancia, kind, id]);
}

/** The key's id: not the key, and not enough of any hash of it to matter. */
function keyIdOf(key: Buffer): Buffer {
  return createHash('sha256').update('pasarela engine key id\0').update(key).digest().subarray(0, ID_BYTES);
}

/** A cipher over a 32-byte key; the key stays in this closure (no field holds it, so no log of the object shows it). */
export function engineCipherOf(key: Buffer): EngineCipher & { readonly keyId: string } {
  if (key.length !== 32) throw new EngineKeyError('an engine key is 32 bytes');
  const own = Buffer.from(key);
  const id = keyIdOf(own);
  return {
    keyId: id.toString('hex'),
    seal(aad: string, plain: Buffer): Buffer {
      const nonce = randomBytes(NONCE_BYTES);
      const c = createCipheriv('aes-256-gcm', own, nonce);
      c.setAAD(Buffer.from(aad, 'utf8'));
      const body = Buffer.concat([c.update(plain), c.final()]);
      return Buffer.concat([Buffer.of(SEALED_VERSION), id, nonce, body, c.getAuthTag()]);
    },
    open(aad: string, sealed: Buffer): Buffer {
      if (sealed.length < HEAD + TAG_BYTES || sealed[0] !== SEALED_VERSION)
        throw new SealedValueRefused(`not a sealed value of this version (format ${sealed[0] ?? 'none'}, ${sealed.length} bytes)`);
      const sealedId = sealed.subarray(1, 1 + ID_BYTES);
      if (!sealedId.equals(id))
        throw new SealedValueRefused(`it was sealed with another key (id ${sealedId.toString('hex')}; this node's key is ${id.toString('hex')})`);
      const d = createDecipheriv('aes-256-gcm', own, sealed.subarray(1 + ID_BYTES, HEAD));
      d.setAAD(Buffer.from(aad, 'utf8'));
      d.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
      try {
        return Buffer.concat([d.update(sealed.subarray(HEAD, sealed.length - TAG_BYTES)), d.final()]);
      } catch {
        throw new SealedValueRefused('it does not open with this key (altered, or moved from another row)');
      }
    },
  };
}

/**
 * Group or other may read (or write) the file: refused, never warned
 * about. The key opens every linked line's private keys, so a start that
 * would run on a key others can read stops and says `chmod 600` (D-116).
 * Windows keeps no such bits.
 */
function checkMode(file: string, origin: string): void {
  if (process.platform === 'win32') return;
  const mode = statSync(file).mode & 0o777;
  if ((mode & 0o077) !== 0)
    throw new EngineKeyError(
      `the engine key file ${file} (${origin}) is open to others (mode ${mode.toString(8).padStart(3, '0')}): it unlocks every linked line; run chmod 600 ${file} and start again`,
    );
}

function parseKey(text: string, file: string, origin: string): Buffer {
  const m = KEY_LINE.exec(text.trim());
  if (!m)
    throw new EngineKeyError(`the engine key file ${file} (${origin}) is not a key pasarela wrote (one line: pasarela-engine-key/1 and 32 bytes in base64)`);
  if (Number(m[1]) !== KEY_VERSION)
    throw new EngineKeyError(`the engine key file ${file} (${origin}) is of format ${m[1]}; this version reads format ${KEY_VERSION}`);
  return Buffer.from(m[2]!, 'base64');
}

/** The text of a new key file: 32 random bytes. */
export function newEngineKeyText(): string {
  return `pasarela-engine-key/${KEY_VERSION} ${randomBytes(32).toString('base64')}\n`;
}

/**
 * Makes the default key file unless one is there: written whole to a file
 * of its own, then linked into place (an existing one is never replaced, and
 * no reader ever sees half a key). True when this call made it.
 */
function makeKeyFile(file: string): boolean {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, newEngineKeyText(), { mode: 0o600, flag: 'wx' });
  try {
    linkSync(tmp, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    unlinkSync(tmp);
  }
}

/**
 * The engine's cipher, from its key file: `keyFile` (`--engine-key-file`),
 * else `keyEnv` (the path `PASARELA_ENGINE_KEY_FILE` gave), else
 * `<dataDir>/engine.key`, made on first use (mode 0600). A file named by a
 * setting must exist: made on one node only, it would differ from the
 * others'. A file others may read is refused (checkMode).
 */
export async function loadEngineCipher(opts: { dataDir: string; keyFile?: string; keyEnv?: string }): Promise<EngineCipher & EngineKeyInfo> {
  const named = opts.keyFile
    ? { file: opts.keyFile, origin: '--engine-key-file' }
    : opts.keyEnv
      ? { file: opts.keyEnv, origin: 'PASARELA_ENGINE_KEY_FILE' }
      : null;
  const file = resolve(named?.file ?? join(opts.dataDir, ENGINE_KEY_FILE));
  const origin = named?.origin ?? 'the data directory';
  let created = false;
  if (!named) created = makeKeyFile(file);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT')
      throw new EngineKeyError(
        `the engine key file ${file} (${origin}) does not exist: copy the engine.key of the node that sealed the state (its data directory), the same file on every node (a first node makes it as it starts: start the others once it listens)`,
      );
    throw new EngineKeyError(`the engine key file ${file} (${origin}) cannot be read: ${code ?? (err as Error).message}`);
  }
  checkMode(file, origin);
  const cipher = engineCipherOf(parseKey(text, file, origin));
  return Object.assign(cipher, { keyFile: file, created });
}
