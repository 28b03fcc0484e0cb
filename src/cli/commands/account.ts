import type { Command } from 'commander';
import { API } from '../../core/api/api-routes.js';
import type { Ctx } from '../context.js';
import type { CtxOf } from '../main.js';
import { emit, printFields } from '../output.js';
import { positiveInt } from '../parse.js';
import type { ClienteSummary } from './admin-clients.js';
import { registerMovimientos } from './movimientos.js';

interface SaldoBody {
  cliente_id: number;
  celular_id: number | null;
  saldo_global: number;
  saldo_celular: number | null;
  plan: string;
  ilimitado: boolean;
  consumo_mes: number;
}

export async function runInfo(ctx: Ctx): Promise<void> {
  const b = await ctx.client().call<ClienteSummary>('GET', API.info, { key: ctx.key() });
  emit(ctx, b, () =>
    printFields(ctx.term, [
      ['cliente', `${b.cliente.id} ${b.cliente.nombre}`],
      ['email', b.cliente.email],
      ['estado', b.cliente.estado],
      ['plan', b.cliente.plan],
      ['saldo_global', b.saldo_global],
      ['celulares', `${b.num_celulares} (${b.num_celulares_activos} active)`],
      ['max_celulares', b.cliente.max_celulares ?? 'unlimited'],
      ['consumo_mes_actual', b.cliente.consumo_mes_actual],
      ['mensajes_30d', b.mensajes_30d],
    ]),
  );
}

export interface SaldoOptions {
  celular?: number;
}

export async function runSaldo(o: SaldoOptions, ctx: Ctx): Promise<void> {
  const b = await ctx.client().call<SaldoBody>('GET', API.saldo, { key: ctx.key(), query: { celular_id: o.celular } });
  emit(ctx, b, () =>
    printFields(ctx.term, [
      ['plan', b.ilimitado ? `${b.plan} (sin cargo por envío)` : b.plan],
      ['saldo_global', b.saldo_global],
      ...(b.celular_id !== null
        ? ([
            ['celular', b.celular_id],
            ['saldo_celular', b.saldo_celular],
          ] as Array<[string, number | null]>)
        : []),
      ['consumo_mes', b.consumo_mes],
    ]),
  );
}

/** `pasarela info` and `pasarela saldo`: the account as the key sees it. */
export function registerAccount(program: Command, ctxOf: CtxOf): void {
  program
    .command('info')
    .description('client account: plan, state, lines, consumption')
    .action((_o, cmd: Command) => runInfo(ctxOf(cmd)));

  const saldo = program
    .command('saldo')
    .description('balances: global and of one celular; movements and consumption below')
    .option('--celular <id>', 'celular whose balance to show (with a client key)', positiveInt)
    .action((o: SaldoOptions, cmd: Command) => runSaldo(o, ctxOf(cmd)));
  registerMovimientos(saldo, ctxOf);
}
