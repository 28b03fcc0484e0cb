import { InvalidArgumentError, Option, type Command } from 'commander';
import { API } from '../../core/api/api-routes.js';
import { MOVIMIENTO_FIELDS, MOVIMIENTO_TIPOS, type MovimientoView } from '../../core/billing/movimientos.js';
import type { Ctx } from '../context.js';
import { addListingOptions, runListing, type ListingOpts } from '../listing.js';
import type { CtxOf } from '../main.js';
import { emit, painted, printFields, printTable, type Cell } from '../output.js';
import { positiveInt } from '../parse.js';

/** `pasarela saldo movimientos`, `pasarela saldo consumo` and `pasarela admin balance movements`: the ledger and a month's consumption. */

export interface MovimientosOptions extends ListingOpts {
  celular?: number;
  tipo?: string;
}

const FIELDS = {
  celular_id: '--celular',
  tipo: '--tipo',
  desde: '--desde',
  hasta: '--hasta',
  page: '--page',
  por_pagina: '--por-pagina',
  cliente_id: '--cliente',
} as const;

const HEADERS = ['fecha', 'id', 'tipo', 'monto', 'saldo_despues', 'celular', 'msg_id', 'motivo', 'actor'];

function row(ctx: Ctx, m: MovimientoView): Cell[] {
  const c = ctx.term.color;
  const monto = painted(m.monto > 0 ? `+${m.monto}` : String(m.monto), m.monto < 0 ? c.red : c.green);
  return [m.fecha, m.id, m.tipo, monto, m.saldo_despues, m.celular_id ?? 'global', m.msg_id, m.motivo, m.actor];
}

function listing(o: MovimientosOptions, extra: { path: typeof API.movimientos | typeof API.adminMovimientos; cliente?: number; key?: string }) {
  return {
    path: extra.path,
    field: 'movimientos',
    query: { cliente_id: extra.cliente, celular_id: o.celular, tipo: o.tipo, desde: o.desde, hasta: o.hasta },
    fields: FIELDS,
    id: (m: MovimientoView) => m.id,
    csvColumns: MOVIMIENTO_FIELDS,
    tableHeaders: HEADERS,
    tableRow: (ctx: Ctx, m: MovimientoView) => row(ctx, m),
    ...(extra.key ? { key: extra.key } : {}),
  };
}

export async function runMovimientos(o: MovimientosOptions, ctx: Ctx): Promise<void> {
  await runListing<MovimientoView>(ctx, o, listing(o, { path: API.movimientos }));
}

export async function runAdminMovements(o: MovimientosOptions & { cliente: number }, ctx: Ctx): Promise<void> {
  await runListing<MovimientoView>(ctx, o, listing(o, { path: API.adminMovimientos, cliente: o.cliente, key: ctx.adminToken() }));
}

interface ConsumoBody {
  cliente_id: number;
  mes: string;
  zona_horaria: string;
  plan: string;
  mensajes: number;
  monto: number;
  lineas: Array<{ celular_id: number; numero: string; mensajes: number; monto: number }>;
}

function month(value: string): string {
  const r = /^(\d{4})-(\d{2})$/.exec(value);
  if (!r || Number(r[2]) < 1 || Number(r[2]) > 12) throw new InvalidArgumentError('expected a month written YYYY-MM, such as 2026-11');
  return value;
}

export async function runConsumo(o: { mes?: string }, ctx: Ctx): Promise<void> {
  const b = await ctx.client().call<ConsumoBody>('GET', API.consumo, { key: ctx.key(), query: { mes: o.mes }, fields: { mes: '--mes' } });
  emit(ctx, b, () => {
    printFields(ctx.term, [
      ['mes', `${b.mes} (${b.zona_horaria})`],
      ['plan', b.plan],
      ['mensajes', b.mensajes],
      ['monto', b.monto],
    ]);
    printTable(
      ctx.term,
      ['celular', 'numero', 'mensajes', 'monto'],
      b.lineas.map((l) => [l.celular_id, l.numero, l.mensajes, l.monto]),
    );
  });
}

function tipoOption(): Option {
  return new Option('--tipo <tipo>', 'only charges (cobro), refunds (reembolso) or manual changes (manual)').choices(MOVIMIENTO_TIPOS);
}

/**
 * Under `saldo` (whose own action stays `pasarela saldo`): `movimientos` and
 * `consumo`. saldo's own --celular is read before a subcommand's name and
 * after it alike, so the listing takes it from there too.
 */
export function registerMovimientos(saldo: Command, ctxOf: CtxOf): void {
  const mov = saldo.command('movimientos').description('balance movements (charges, refunds, manual changes), newest first');
  addListingOptions(mov, { beforeDays: [tipoOption()] }).action((o: MovimientosOptions, cmd: Command) =>
    runMovimientos({ ...o, celular: o.celular ?? (cmd.parent?.opts() as { celular?: number }).celular }, ctxOf(cmd)),
  );
  saldo
    .command('consumo')
    .description("a month's consumption per line: messages sent (failed ones left out) and credits they cost")
    .option('--mes <YYYY-MM>', "the month (server's zone; default this month)", month)
    .action((o: { mes?: string }, cmd: Command) => runConsumo(o, ctxOf(cmd)));
}

/** `admin balance movements --cliente ID`: one client's movements, with the operator token. */
export function registerAdminMovements(balance: Command, ctxOf: CtxOf): void {
  const cmd = balance
    .command('movements')
    .description("one client's balance movements, newest first")
    .requiredOption('--cliente <id>', 'client id', positiveInt);
  addListingOptions(cmd, { beforeDays: [tipoOption()] }).action((o: MovimientosOptions & { cliente: number }, c: Command) => runAdminMovements(o, ctxOf(c)));
}
