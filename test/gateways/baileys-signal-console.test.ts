import { afterAll, describe, expect, it } from 'vitest';
import { guardSignalConsole, signalConsoleLog } from '../../src/gateways/baileys/signal-console.js';

describe("libsignal's console lines under the engine", () => {
  const original = { info: console.info, warn: console.warn, error: console.error, log: console.log, debug: console.debug };
  afterAll(() => Object.assign(console, original));

  it('drops the session records libsignal prints (their keys), sends its problems to the engine log as a phrase, passes the rest', async () => {
    // As when another file of this worker loaded the engine first: a console replaced since is wrapped again.
    guardSignalConsole();
    const written: unknown[][] = [];
    for (const m of ['info', 'warn', 'error', 'log', 'debug'] as const) console[m] = (...a: unknown[]) => void written.push([m, ...a]);
    const warned: string[] = [];
    guardSignalConsole();
    signalConsoleLog({ warn: (_f, msg) => void warned.push(msg), error: (_f, msg) => void warned.push(msg) });
    const session = { currentRatchet: { rootKey: Buffer.from('secret-root-key'), ephemeralKeyPair: { privKey: Buffer.alloc(32, 7) } } };

    console.info('Opening session:', session);
    console.info('Closing session:', session);
    console.info('Removing old closed session:', session);
    console.warn('Session already closed', session);
    console.info('Migrating session to:', 2);
    expect(written).toEqual([]);

    console.error('Session error:Error: Bad MAC', new Error('Bad MAC').stack);
    console.error('Failed to decrypt message with any known session...');
    expect(warned).toEqual(['libsignal: Session error:Error: Bad MAC', 'libsignal: Failed to decrypt message with any known session...']);
    expect(JSON.stringify(written)).not.toContain('secret-root-key');

    // libsignal's own call, through a real session record.
    const { SessionRecord } = (await import('libsignal')) as unknown as { SessionRecord: new () => { closeSession(s: unknown): void } };
    new SessionRecord().closeSession({ indexInfo: { closed: -1 }, currentRatchet: { rootKey: Buffer.from('another-secret') } });
    expect(written).toEqual([]);

    console.info('pasarela: something else', 1);
    expect(written).toEqual([['info', 'pasarela: something else', 1]]);
  });
});
