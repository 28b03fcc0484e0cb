import type * as Baileys from 'baileys';
import { guardSignalConsole } from './signal-console.js';

export type BaileysLib = typeof Baileys;

/**
 * The library, loaded on first use (a server on the simulator never loads it)
 * and corrected before any socket exists (docs/decisions.md D-120).
 *
 * baileys 7.0.0-rc14's `Curve.verify` calls libsignal's `verifySignature`
 * inside try/catch and answers true unless it throws; libsignal 6 answers
 * false for a bad signature instead of throwing, so any 64-byte signature
 * passed: the server's certificate chain (noise-handler.js) and the pairing's
 * account signature (validate-connection.js) were not checked. Both call
 * sites read `Curve.verify` from the one exported object at call time, so
 * replacing the property corrects them all.
 */
let loading: Promise<BaileysLib> | undefined;

export function loadBaileys(): Promise<BaileysLib> {
  loading ??= (async () => {
    // Before any session exists: libsignal would print its records, keys included (signal-console.ts).
    guardSignalConsole();
    const lib = await import('baileys');
    // libsignal's own check: true only for a valid signature; throws for malformed input.
    const curve = (await import('libsignal/src/curve.js')) as { verifySignature: VerifySignature };
    correctVerify(lib, (pub, msg, sig) => curve.verifySignature(pub, msg, sig));
    return lib;
  })();
  return loading;
}

type VerifySignature = (pub: Uint8Array, msg: Uint8Array, sig: Uint8Array) => boolean;

/** Replaces `Curve.verify` with one that returns libsignal's boolean (exported for the test that proves it). */
export function correctVerify(lib: Pick<BaileysLib, 'Curve' | 'generateSignalPubKey'>, verifySignature: VerifySignature): void {
  const curve = lib.Curve as { verify: (pub: Uint8Array, msg: Uint8Array, sig: Uint8Array) => boolean; corrected?: true };
  if (curve.corrected) return;
  curve.verify = (pub, msg, sig) => {
    try {
      return verifySignature(lib.generateSignalPubKey(pub), msg, sig) === true;
    } catch {
      return false;
    }
  };
  curve.corrected = true;
}
