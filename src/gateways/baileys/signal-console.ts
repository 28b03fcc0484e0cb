import { silentLog, type EngineLog } from './logger.js';

/**
 * libsignal (under Baileys) writes to the global console with whole session
 * records as arguments ("Opening session:", session): their root, chain and
 * ratchet keys would reach serve's output. Once the engine loads, those calls
 * keep only their phrase: the routine ones (a session opened, closed,
 * migrated) are dropped, the problems go to the engine's log as a warning.
 * Every other console call passes through unchanged.
 */
const ROUTINE =
  /^(Opening session|Closing session|Removing old closed session|Migrating session to|Session already (open|closed)|Closing open session in favor)/;
const PROBLEM =
  /^(Failed to decrypt message|Session error|Decrypted message with closed session|V1 session storage migration error|Unhandled bucket type|WARNING: Expected pubkey)/;

let sink: EngineLog = silentLog;
/** Marks a writer this file made, so a console replaced since (a test's spy) is wrapped again. */
const GUARDED = Symbol('pasarela.signal-console');

/** Where the problems go: the log of the engine that runs now. */
export function signalConsoleLog(log: EngineLog): void {
  sink = log;
}

/** Wraps console's writers; idempotent (a writer already wrapped is left as it is). */
export function guardSignalConsole(): void {
  for (const method of ['log', 'info', 'warn', 'error', 'debug'] as const) {
    if ((console[method] as { [GUARDED]?: true })[GUARDED]) continue;
    const write = console[method].bind(console);
    const guarded = (...args: unknown[]) => {
      const first = args[0];
      if (typeof first === 'string' && ROUTINE.test(first)) return;
      // "Session error:" + e carries the error's text (never a key); its stack and objects are dropped.
      if (typeof first === 'string' && PROBLEM.test(first)) return sink.warn({}, `libsignal: ${first.split('\n')[0]!.slice(0, 200)}`);
      write(...args);
    };
    console[method] = Object.assign(guarded, { [GUARDED]: true as const });
  }
}
