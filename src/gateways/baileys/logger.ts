import type { SocketConfig } from 'baileys';

type ILogger = SocketConfig['logger'];

/** Where the engine's own lines go: a fixed phrase and fields that are never a key, a number's message or its text. */
export interface EngineLog {
  warn(fields: Record<string, unknown>, msg: string): void;
  error(fields: Record<string, unknown>, msg: string): void;
}

export const silentLog: EngineLog = { warn: () => undefined, error: () => undefined };

/**
 * The logger Baileys gets: warnings and errors only, and of each only the
 * library's own phrase and the error's class. The objects Baileys logs carry
 * stanzas, message bodies, keys and numbers: they are dropped, never written.
 */
export function libraryLogger(log: EngineLog, instancia: string): ILogger {
  const phrase = (obj: unknown, msg?: string): string =>
    (typeof obj === 'string' ? obj : typeof msg === 'string' ? msg : 'baileys reported a problem').slice(0, 200);
  const fields = (obj: unknown) => {
    const err = (obj as { err?: unknown } | undefined)?.err ?? obj;
    return err instanceof Error ? { instancia, error: err.name } : { instancia };
  };
  const logger: ILogger = {
    level: 'warn',
    child: () => logger,
    trace: () => undefined,
    debug: () => undefined,
    info: () => undefined,
    warn: (obj: unknown, msg?: string) => log.warn(fields(obj), `baileys: ${phrase(obj, msg)}`),
    error: (obj: unknown, msg?: string) => log.error(fields(obj), `baileys: ${phrase(obj, msg)}`),
  };
  return logger;
}
