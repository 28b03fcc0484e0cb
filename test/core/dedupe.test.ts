import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import type { Core } from '../../src/core/context.js';
import { MemoryCounters } from '../../src/core/nodes/counters-memory.js';
import { checkDuplicate, DUPE_BLOCK_MS, DUPE_WINDOW_MS, identityHash } from '../../src/core/sending/dedupe.js';
import { ERRORS } from '../../src/core/api/errors.js';
import { rejectionOf } from '../helpers/expect.js';

/** Duplicate protection (core/sending/dedupe.ts) on the in-memory Counters and a driven clock: no server, no real time. */
function setup() {
  const clock = new ManualClock(Date.UTC(2026, 3, 1, 12));
  const core = { clock, counters: new MemoryCounters(clock) } as Pick<Core, 'clock' | 'counters'> as Core;
  return { clock, core };
}

const LINE = 7;
const hash = (texto: string, destinatario = '525598765432') => identityHash({ tipo: 'texto', destinatario, parts: [texto] });

describe('duplicate protection', () => {
  it('the same message counts 1, 2, 3; the 4th within 120 s is refused (306, retry after 300 s) and not counted', async () => {
    const { core } = setup();
    for (const n of [1, 2, 3]) expect((await checkDuplicate(core, LINE, hash('hola'))).count).toBe(n);
    const err = await rejectionOf(checkDuplicate(core, LINE, hash('hola')));
    expect(err.row).toBe(ERRORS.DUPLICATE_BLOCK);
    expect(err.extras.retryAfter).toBe(DUPE_BLOCK_MS / 1000);
    expect(err.extras.detalle).toMatch(/3 times within 120 s.*300 s.*300 s remaining/);
    // The refused 4th gave its count back: three remain, the block stands on its own.
    expect((await core.counters.get(`dupe:${LINE}:${hash('hola')}`))?.count).toBe(3);
  });

  it('a block refuses every send of the line, with the seconds left, until 300 s have passed; other lines go on', async () => {
    const { core, clock } = setup();
    for (let i = 0; i < 3; i++) await checkDuplicate(core, LINE, hash('hola'));
    await rejectionOf(checkDuplicate(core, LINE, hash('hola')));
    clock.advance(100_000);
    const other = await rejectionOf(checkDuplicate(core, LINE, hash('otra cosa', '14155552671')));
    expect(other.extras.retryAfter).toBe(200);
    expect(other.extras.detalle).toMatch(/200 s remaining/);
    expect((await checkDuplicate(core, LINE + 1, hash('hola'))).count).toBe(1);
    // 0.5 s left is said as 1 s, never 0.
    clock.advance(199_500);
    expect((await rejectionOf(checkDuplicate(core, LINE, hash('otra cosa')))).extras.retryAfter).toBe(1);
    clock.advance(500);
    expect((await checkDuplicate(core, LINE, hash('otra cosa'))).count).toBe(1);
  });

  it('the count is of a fixed 120 s window from the first send: after it, the same message counts from 1 again', async () => {
    const { core, clock } = setup();
    await checkDuplicate(core, LINE, hash('hola'));
    clock.advance(DUPE_WINDOW_MS - 1);
    expect((await checkDuplicate(core, LINE, hash('hola'))).count).toBe(2);
    clock.advance(1);
    expect((await checkDuplicate(core, LINE, hash('hola'))).count).toBe(1);
  });

  it('a send refused after the check gives its count back, so it never moves the line toward a block', async () => {
    const { core } = setup();
    for (let i = 0; i < 5; i++) {
      const d = await checkDuplicate(core, LINE, hash('hola'));
      expect(d.count).toBe(1);
      await d.release();
    }
    for (const n of [1, 2, 3]) expect((await checkDuplicate(core, LINE, hash('hola'))).count).toBe(n);
  });
});

describe('what makes two messages the same', () => {
  const id = (tipo: 'texto' | 'imagen' | 'documento', destinatario: string, ...parts: Array<string | undefined>) => identityHash({ tipo, destinatario, parts });

  it('type, recipient and every part count; an absent part is an empty one', () => {
    const base = id('imagen', '525598765432', 'https://x/a.png', 'hola');
    expect(id('imagen', '525598765432', 'https://x/a.png', 'hola')).toBe(base);
    expect(id('documento', '525598765432', 'https://x/a.png', 'hola')).not.toBe(base);
    expect(id('imagen', '14155552671', 'https://x/a.png', 'hola')).not.toBe(base);
    expect(id('imagen', '525598765432', 'https://x/a.png', 'adios')).not.toBe(base);
    expect(id('imagen', '525598765432', 'https://x/a.png', undefined)).toBe(id('imagen', '525598765432', 'https://x/a.png', ''));
  });

  it('parts are kept apart: moving text from one part to the next is another message', () => {
    expect(id('imagen', '525598765432', 'ab', 'c')).not.toBe(id('imagen', '525598765432', 'a', 'bc'));
    expect(id('texto', '525598765432', 'a')).not.toBe(id('texto', '52559876543', '2a'));
  });
});
