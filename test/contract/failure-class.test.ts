import Database from 'better-sqlite3';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { REASON_NOT_SENT, REASON_UNKNOWN } from '../../src/core/sending/direct-recovery.js';
import { failureClase } from '../../src/core/sending/failure-class.js';
import { GatewayFailure } from '../../src/core/ports/gateway.js';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { PG_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { PG_ABSENT, PG_URL, pgSchema } from './adapters.js';

/**
 * The failure class beside a message's error (core/sending/failure-class.ts, D-65):
 * what each gateway failure is classed as, and how the migration classes the
 * rows that failed before it, on both stores.
 */
describe('failureClase', () => {
  it('classes a gateway failure by what may have gone, never by its words', () => {
    expect(failureClase(new GatewayFailure('no such number', 'permanent'))).toBe('rechazado');
    expect(failureClase(new GatewayFailure('no such number', 'permanent', undefined, true))).toBe('incierto');
    expect(failureClase(new GatewayFailure('slow down', 'rate_limited', 5_000))).toBe('no_enviado');
    expect(failureClase(new GatewayFailure('connection refused', 'transient'))).toBe('no_enviado');
    expect(failureClase(new GatewayFailure('timeout after 10 s', 'transient', undefined, true))).toBe('incierto');
    expect(failureClase(new Error('refused for good: a bug'))).toBe('incierto');
  });
});

/** Rows as earlier versions wrote them: [msg_id, error, enviado_at] and the class each must get. */
const OLD_ROWS: Array<[string, string, number | null, string]> = [
  ['m-refused', 'refused for good: 5215500000001 is not on WhatsApp', null, 'rechazado'],
  ['m-stopped', REASON_NOT_SENT, null, 'no_enviado'],
  ['m-ttl', 'expired: not sent within the queue TTL', null, 'no_enviado'],
  ['m-retries', 'expired after retries: connection refused', null, 'no_enviado'],
  ['m-deleted', 'the celular was deleted', null, 'no_enviado'],
  ['m-unknown', REASON_UNKNOWN, null, 'incierto'],
  ['m-receipt', 'refused for good: said after it went', 1_000, 'fallido'],
];
const insert = (n: number) =>
  `INSERT INTO mensajes (msg_id, cliente_id, celular_id, destinatario, tipo, modo, estado, error, created_at, enviado_at)
   VALUES (${n === 0 ? '?, 1, 1, ?, ?, ?, ?, ?, 0, ?' : '$1, 1, 1, $2, $3, $4, $5, $6, 0, $7'})`;

describe('the failure-class migration', () => {
  it('SQLite: rows that failed before it are classed; others stay unclassed', () => {
    const db = new Database(':memory:');
    const target = MIGRATIONS.find((m) => /failure class/.test(m.name))!;
    for (const m of MIGRATIONS.filter((m) => m.version < target.version)) db.exec(m.sql);
    for (const [id, error, enviado] of OLD_ROWS) db.prepare(insert(0)).run(id, '5215512345678', 'texto', 'cola', 'error', error, enviado);
    db.prepare(insert(0)).run('m-sent', '5215512345678', 'texto', 'cola', 'enviado', null, 1_000);
    db.exec(target.sql);
    const got = Object.fromEntries(
      (db.prepare('SELECT msg_id, error_clase FROM mensajes').all() as Array<{ msg_id: string; error_clase: string | null }>).map((r) => [
        r.msg_id,
        r.error_clase,
      ]),
    );
    expect(got).toEqual({ ...Object.fromEntries(OLD_ROWS.map(([id, , , clase]) => [id, clase])), 'm-sent': null });
    db.close();
  });

  it.skipIf(PG_ABSENT !== null)('PostgreSQL: the same classes', async () => {
    const fresh = await pgSchema();
    const url = new URL(PG_URL);
    url.searchParams.set('options', `-c search_path=${fresh.schema}`);
    const c = new pg.Client({ connectionString: url.toString() });
    try {
      await c.connect();
      const target = PG_MIGRATIONS.find((m) => /failure class/.test(m.name))!;
      for (const m of PG_MIGRATIONS.filter((m) => m.version < target.version)) await c.query(m.sql);
      for (const [id, error, enviado] of OLD_ROWS) await c.query(insert(1), [id, '5215512345678', 'texto', 'cola', 'error', error, enviado]);
      await c.query(insert(1), ['m-sent', '5215512345678', 'texto', 'cola', 'enviado', null, 1_000]);
      await c.query(target.sql);
      const { rows } = await c.query<{ msg_id: string; error_clase: string | null }>('SELECT msg_id, error_clase FROM mensajes');
      expect(Object.fromEntries(rows.map((r) => [r.msg_id, r.error_clase]))).toEqual({
        ...Object.fromEntries(OLD_ROWS.map(([id, , , clase]) => [id, clase])),
        'm-sent': null,
      });
    } finally {
      await c.end();
      await fresh.drop();
    }
  });
});
