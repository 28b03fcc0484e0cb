import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// SQLite (3.51, better-sqlite3's) reads a LIMIT or OFFSET bound as a bare parameter when it plans, and then marks the
// statement to be compiled again at every new binding: the webhook claim was parsed and planned anew at every call
// (about 3% of the background thread's CPU in figure 2). `CAST(? AS INTEGER)` keeps the plan (D-147).
const DIR = join(import.meta.dirname, '..', '..', 'src', 'store', 'sqlite');
const BARE = /\b(LIMIT|OFFSET)\s+(\?|@\w+|:\w+|\$\w+)/g;

describe('SQLite statements', () => {
  it('bind no bare parameter as a LIMIT or OFFSET', () => {
    const found: string[] = [];
    for (const f of readdirSync(DIR).filter((n) => n.endsWith('.ts'))) {
      for (const m of readFileSync(join(DIR, f), 'utf8').matchAll(BARE)) found.push(`${f}: ${m[0]}`);
    }
    expect(found).toEqual([]);
  });
});
