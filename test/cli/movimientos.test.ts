import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqliteStore } from '../../src/store/sqlite/store.js';
import { seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { injectTransport } from '../helpers/inject-http.js';
import { parseCsv } from '../helpers/csv.js';
import { Cli, expectCleanExit, expectJsonOnly, fields, rows } from './helpers.js';

/**
 * `pasarela saldo movimientos`, `saldo consumo` and `admin balance movements`
 * in-process against a real server: table, csv, --all across pages, the
 * filters passed through, refusals as usage errors or the service's words,
 * and `pasarela saldo` itself unchanged beside its subcommands.
 */

let s: TestServer;
let cli: Cli;
let A: Seeded;

const key = () => ({ env: { PASARELA_KEY: A.clientKey } });

beforeAll(async () => {
  s = await startTestServer({ tz: 'UTC' });
  cli = new Cli(s.url, injectTransport(s.app));
  A = await seedClient(s, { saldo: 10 });
  // 59 more movements: additions and removals by hand, on the global balance and the line's, and one with a formula-like motivo.
  for (let i = 0; i < 59; i++) {
    const onLine = i % 3 === 0;
    const r = await s.core.store.changeBalance(
      {
        cliente_id: A.clienteId,
        celular_id: onLine ? A.celularId : null,
        monto: i === 58 ? -1 : 2,
        motivo: i === 58 ? '=1+1' : `recarga ${i}`,
        actor: 'operator',
      },
      s.clock.now() + i,
    );
    expect(r.ok).toBe(true);
  }
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

describe('pasarela saldo movimientos', () => {
  it('a table of the newest 50 off a TTY: tab-separated, newest first', async () => {
    const out = expectCleanExit(await cli.run(['saldo', 'movimientos'], key()));
    const r = rows(out);
    expect(r).toHaveLength(50);
    // fecha, id, tipo, monto, saldo_despues, celular, msg_id, motivo, actor
    expect(r[0]!.slice(2)).toEqual(['manual', '-1', expect.any(String), 'global', '', '=1+1', 'operator']);
    expect(r[1]![3]).toBe('+2');
  });

  it('--all --format csv: every movement once, the header first, formula-guarded', async () => {
    const out = expectCleanExit(await cli.run(['saldo', 'movimientos', '--all', '--format', 'csv', '--por-pagina', '7'], key()));
    const csv = parseCsv(out);
    expect(csv[0]).toEqual(['id', 'fecha', 'tipo', 'monto', 'saldo_despues', 'celular_id', 'msg_id', 'motivo', 'actor']);
    expect(csv).toHaveLength(61);
    expect(new Set(csv.slice(1).map((x) => x[0])).size).toBe(60);
    expect(csv[1]![7]).toBe("'=1+1");
    expect(csv[60]![7]).toBe('saldo inicial');
  });

  it('--celular (before or after the subcommand) and --tipo pass through; --json is the API page', async () => {
    for (const args of [
      ['saldo', 'movimientos', '--celular', String(A.celularId), '--json'],
      ['saldo', '--celular', String(A.celularId), 'movimientos', '--json'],
    ]) {
      const b = expectJsonOnly(await cli.run(args, key()));
      expect(b.total).toBe(20);
      expect(b.movimientos.every((m: { celular_id: number }) => m.celular_id === A.celularId)).toBe(true);
    }
    const none = expectJsonOnly(await cli.run(['saldo', 'movimientos', '--tipo', 'reembolso', '--json'], key()));
    expect(none).toMatchObject({ total: 0, movimientos: [] });
  });

  it('refusals: a bad --tipo or day is a usage error before any request; a sibling-less id is the service 404', async () => {
    const tipo = await cli.run(['saldo', 'movimientos', '--tipo', 'regalo'], key());
    expect(tipo.exitCode).toBe(2);
    expect(tipo.stderr).toMatch(/--tipo/);
    const day = await cli.run(['saldo', 'movimientos', '--desde', 'ayer'], key());
    expect(day.exitCode).toBe(2);
    const missing = await cli.run(['saldo', 'movimientos', '--celular', '999999'], key());
    expect(missing.exitCode).not.toBe(0);
    expect(missing.stderr).toMatch(/999999/);
  });

  it('`pasarela saldo` still shows the balances', async () => {
    const f = fields(expectCleanExit(await cli.run(['saldo', '--celular', String(A.celularId)], key())));
    expect(f).toMatchObject({ celular: String(A.celularId), saldo_celular: '40' });
    expect(Number(f.saldo_global)).toBe(10 + 39 * 2 - 2 - 1);
  });
});

describe('pasarela saldo consumo and admin balance movements', () => {
  it("consumo: this month's lines; a bad --mes is a usage error", async () => {
    const b = expectJsonOnly(await cli.run(['saldo', 'consumo', '--json'], key()));
    expect(b.lineas).toEqual([{ celular_id: A.celularId, numero: A.numero, mensajes: 0, monto: 0 }]);
    const t = expectCleanExit(await cli.run(['saldo', 'consumo', '--mes', '2001-02'], key()));
    expect(t).toMatch(/2001-02/);
    expect((await cli.run(['saldo', 'consumo', '--mes', '2001-13'], key())).exitCode).toBe(2);
  });

  it('admin balance movements --cliente: with the operator token', async () => {
    const b = expectJsonOnly(
      await cli.run(['admin', 'balance', 'movements', '--cliente', String(A.clienteId), '--tipo', 'manual', '--json'], {
        env: { PASARELA_ADMIN_TOKEN: s.adminToken },
      }),
    );
    expect(b.total).toBe(60);
    const missing = await cli.run(['admin', 'balance', 'movements', '--cliente', '999999'], { env: { PASARELA_ADMIN_TOKEN: s.adminToken } });
    expect(missing.exitCode).not.toBe(0);
    expect(missing.stderr).toMatch(/999999/);
  });
});

describe('a ledger longer than the counted bound', () => {
  it('a page answers total null; --all walks every page to the first short one', async () => {
    const big = await seedClient(s, { saldo: 0 });
    const db = (s.core.store as SqliteStore).db;
    const insert = db.prepare(
      "INSERT INTO movimientos_saldo (fecha, cliente_id, celular_id, monto, saldo_resultante, motivo, actor) VALUES (?, ?, NULL, -1, 0, 'envio m', 'sistema')",
    );
    db.transaction(() => {
      for (let i = 0; i < 10_050; i++) insert.run(1_000_000 + i, big.clienteId);
    })();
    const env = { env: { PASARELA_KEY: big.clientKey } };
    const one = expectJsonOnly(await cli.run(['saldo', 'movimientos', '--json'], env));
    expect(one).toMatchObject({ total: null, total_paginas: null });
    expect(one.movimientos).toHaveLength(50);
    const out = expectCleanExit(await cli.run(['saldo', 'movimientos', '--all', '--format', 'ndjson', '--por-pagina', '500'], env));
    const lines = out.trimEnd().split('\n');
    expect(lines).toHaveLength(10_050);
    expect(new Set(lines.map((l) => (JSON.parse(l) as { id: number }).id)).size).toBe(10_050);
  });
});
