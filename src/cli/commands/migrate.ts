import { Option, type Command } from 'commander';
import { defaultDataDir } from '../../paths.js';
import type { MoveReport } from '../../store/migrate/move-to-postgres.js';
import type { Ctx } from '../context.js';
import { CliError, usage } from '../exit-codes.js';
import { EXIT } from '../../shared/exit-codes.js';
import type { CtxOf } from '../main.js';
import { emit, printFields, printTable } from '../output.js';
import { serviceUrl } from '../parse.js';

/** `sqlite` (the default data directory) or `sqlite:PATH` (a data directory or its pasarela.db). */
function sqlitePath(v: string, env: NodeJS.ProcessEnv): string {
  const m = /^sqlite(?::(.*))?$/i.exec(v.trim());
  if (!m) throw usage(`--from: "${v}" is not sqlite:PATH (a data directory, or its pasarela.db)`);
  return m[1]?.trim() || defaultDataDir(env);
}

/** The warnings a person must read before starting `serve` on the new store. */
function warnings(r: MoveReport): string[] {
  const out: string[] = [];
  const m = r.queued_media;
  if (m.missing > 0) {
    out.push(
      `${m.missing} queued message(s) name media files not found on this machine (under ${m.dirs.join(', ')}): ` +
        'they will end in error when their turn comes. Run migrate where the data directory is, with its tmp/ in place.',
    );
  }
  if (m.copied > 0) {
    out.push(
      `${m.copied} queued message(s) had their media copied into the database; the first serve on the new store with --data-dir ${r.data_dir} ` +
        'clears the old files from its tmp/, so keep a copy of that directory if you may go back to SQLite.',
    );
  }
  if (r.ledger_gaps_in_source.length > 0) {
    out.push(
      `${r.ledger_gaps_in_source.length} balance(s) already differed from their ledger in SQLite and were copied as they were (see --json, ledger_gaps_in_source)`,
    );
  }
  if (r.recounted.pendientes_corregidos > 0)
    out.push(`${r.recounted.pendientes_corregidos} line(s) had a queue count that did not match their pending messages: set from the messages`);
  if (r.serve_running) {
    out.push(
      `pasarela serve was running on the source (${r.serve_running}): what it wrote after ${r.snapshot_at} is not in the copy; stop it and run migrate again with --replace for the final move`,
    );
  }
  return out;
}

function printReport(ctx: Ctx, r: MoveReport): void {
  printTable(
    ctx.term,
    ['table', 'sqlite', 'postgres'],
    r.tables.map((t) => [t.table, t.sqlite, t.postgres]),
  );
  printFields(ctx.term, [
    ['from', r.from],
    ['data directory', r.data_dir],
    ['to', r.to],
    ['snapshot', r.snapshot_at],
    [
      'schema',
      `SQLite ${r.sqlite_schema.source}${r.sqlite_schema.source === r.sqlite_schema.copied ? '' : ` (copied at ${r.sqlite_schema.copied})`}, PostgreSQL ${r.postgres_schema}`,
    ],
    [
      'balances',
      `${r.sums.saldo_global} global + ${r.sums.saldo_celulares} on lines; ledger sums ${r.sums.movimientos}; ${r.balances_checked} checked against their ledger`,
    ],
    [
      'recounted',
      `${r.recounted.conteos_mensajes} history counts, ${r.recounted.conteos_cuartos} quarter-hour counts, ${r.recounted.conteos_recibidos + r.recounted.conteos_recibidos_cuartos} inbox counts`,
    ],
    ['queued media', `${r.queued_media.copied} copied into the database${r.queued_media.missing ? `, ${r.queued_media.missing} files missing` : ''}`],
    ['seconds', r.seconds],
  ]);
  for (const w of warnings(r)) ctx.term.err(`${ctx.term.errColor.yellow('warning:')} ${w}`);
  ctx.term.err(`✓ moved into ${r.to}; serve it with: pasarela serve --store postgres://... --data-dir ${r.data_dir}`);
}

export interface MigrateOptions {
  from: string;
  to: string;
  replace?: boolean;
}

export async function runMigrate(o: MigrateOptions, ctx: Ctx): Promise<void> {
  const from = sqlitePath(o.from, ctx.env);
  const to = serviceUrl('--to', o.to, /^postgres(ql)?:$/, 'a postgres:// URL (postgres://USER@HOST:5432/DB)');
  // Loaded here so that client commands never pay for the store's modules.
  const { moveToPostgres, MoveRefused } = await import('../../store/migrate/move-to-postgres.js');
  let report: MoveReport;
  try {
    report = await moveToPostgres({ from, to, replace: Boolean(o.replace), progress: ctx.json ? undefined : (line) => ctx.term.err(line) });
  } catch (err) {
    if (!(err instanceof MoveRefused)) throw err;
    const body = { ok: false, error: err.message, refused: err.kind, ...(err.detail ? { check: err.detail } : {}) };
    throw new CliError(err.message, err.kind === 'connect' ? EXIT.UNREACHABLE : EXIT.ERROR, body);
  }
  emit(ctx, report, () => printReport(ctx, report));
}

/** `pasarela migrate`: moves an installation from the embedded SQLite store into PostgreSQL. */
export function registerMigrate(program: Command, ctxOf: CtxOf): void {
  program
    .command('migrate')
    .description('copy an SQLite installation into an empty PostgreSQL store, checked before it commits')
    .addOption(
      new Option('--from <sqlite:PATH>', 'the source: sqlite:DATA_DIR or sqlite:FILE.db (sqlite alone: the default data directory)').makeOptionMandatory(),
    )
    .addOption(new Option('--to <url>', 'the target: postgres://USER[:PASSWORD]@HOST:PORT/DB, empty of pasarela data').makeOptionMandatory())
    .addOption(new Option('--replace', 'delete the pasarela data the target holds, in the same transaction as the copy (a second, final run)'))
    .action((o: MigrateOptions, cmd: Command) => runMigrate(o, ctxOf(cmd)));
}
