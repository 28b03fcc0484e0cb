import type { Command } from 'commander';
import { API } from '../../core/api/api-routes.js';
import { confirmOrYes } from '../confirm.js';
import type { Ctx } from '../context.js';
import { CliError, usage } from '../exit-codes.js';
import { EXIT } from '../../shared/exit-codes.js';
import type { CtxOf } from '../main.js';
import { emit, painted, printTable } from '../output.js';
import { int } from '../parse.js';
import type { ColaLinea } from '../../core/queue/cola.js';

/** The queue's item as GET /api/cola.php answers it (core/queue/cola.ts ColaItem). */
interface ColaItem {
  msg_id: string;
  celular_id: number;
  destinatario: string;
  tipo: string;
  texto: string | null;
  created_at: string;
  due_at: string | null;
  motivo: string;
  intentos: number;
  error: string | null;
  seq: number;
}

interface ColaPage {
  total: number;
  siguiente: number | null;
  mensajes: ColaItem[];
  /** A server before warm-up sends none. */
  lineas?: ColaLinea[];
}

/** A line's caps under its warm-up plan today, in words. */
function warmupCaps(l: ColaLinea): string {
  const dia = l.max_envios_por_dia_efectivo ?? 'no cap';
  return `caps now ${l.max_envios_por_minuto_efectivo} a minute, ${l.max_envios_por_hora_efectivo} an hour, ${dia} a day (warm-up ${l.calentamiento}, day ${l.calentamiento_dia})`;
}

export interface ColaOptions {
  celular?: number;
  porPagina: number;
  despues?: number;
}

/** `pasarela cola`: the pending queued messages in order, with when each is due and why it waits. */
export async function runCola(o: ColaOptions, ctx: Ctx): Promise<void> {
  const b = await ctx.client().call<ColaPage>('GET', API.cola, {
    key: ctx.key(),
    query: { celular_id: o.celular, por_pagina: o.porPagina, despues: o.despues },
  });
  const c = ctx.term.color;
  emit(ctx, b, () => {
    printTable(
      ctx.term,
      ['msg_id', 'celular', 'destinatario', 'tipo', 'creado', 'sale ~', 'motivo'],
      b.mensajes.map((m) => [
        m.msg_id,
        m.celular_id,
        m.destinatario,
        m.tipo,
        m.created_at,
        m.due_at ?? '-',
        painted(m.motivo, m.motivo === 'desconectado' || m.motivo === 'frenado' ? c.red : m.motivo === 'enviando' || m.motivo === 'listo' ? c.green : c.yellow),
      ]),
    );
    if (ctx.term.io.stderrIsTTY) {
      ctx.term.err(`${b.total} pending${b.siguiente !== null ? `; next page: --despues ${b.siguiente}` : ''}`);
      for (const l of b.lineas ?? []) if (l.calentamiento_dia !== null) ctx.term.err(`celular ${l.celular_id}: ${warmupCaps(l)}`);
    }
  });
}

export interface ColaCancelOptions {
  msgIds: string[];
  celular?: number;
  all?: boolean;
  yes?: boolean;
}

interface CancelAnswer {
  cancelados: number;
  no_cancelados: number;
  reembolso: number;
  resultados: Array<{ msg_id: string; resultado: string; reembolso: number }>;
}

/** `pasarela cola cancel MSG_ID... | --celular ID --all`: exit 12 when some were not cancelled (being sent, no longer pending, not found). */
export async function runColaCancel(o: ColaCancelOptions, ctx: Ctx): Promise<void> {
  if (o.all) {
    if (o.msgIds.length > 0) throw usage('give msg_ids or --celular ID --all, not both');
    if (o.celular === undefined) throw usage('--all needs --celular ID: the line whose whole queue is cancelled');
    const ok = await confirmOrYes(ctx, o.yes, () => `Cancel every queued message of celular ${o.celular}? Each is refunded.`, 'nothing cancelled');
    if (!ok) return;
  } else {
    if (o.celular !== undefined) throw usage('--celular cancels a whole line only with --all; to cancel some messages give their msg_ids');
    if (o.msgIds.length === 0) throw usage('give the msg_ids to cancel, or --celular ID --all');
    if (o.msgIds.length > 500) throw usage('at most 500 msg_ids at once');
  }
  const body = o.all ? { celular_id: o.celular, todos: 1 } : { msg_ids: o.msgIds };
  const b = await ctx.client().call<CancelAnswer>('POST', API.colaCancelar, { key: ctx.key(), json: body });
  emit(ctx, b, () => {
    for (const r of b.resultados) ctx.term.out(`${r.msg_id}\t${r.resultado}`);
    ctx.term.err(`${b.cancelados} cancelled, ${b.no_cancelados} not; ${b.reembolso} credits refunded`);
  });
  if (b.no_cancelados > 0) throw new CliError(`${b.no_cancelados} not cancelled`, EXIT.SOME_REFUSED, b);
}

interface RetryAnswer {
  reintentados: number;
  rechazados: number;
  resultados: Array<{ msg_id: string; nuevo_msg_id?: string; api_codigo?: number; mensaje?: string }>;
}

/** `pasarela retry MSG_ID...`: failed messages sent again as new queued sends. One refused: its own exit code; of several, 12. */
export async function runRetry(msgIds: string[], ctx: Ctx): Promise<void> {
  if (msgIds.length === 0) throw usage('give the msg_ids of the failed messages to retry');
  if (msgIds.length > 500) throw usage('at most 500 msg_ids at once');
  const b = await ctx.client().call<RetryAnswer>('POST', API.mensajeReintentar, { key: ctx.key(), json: { msg_ids: msgIds } });
  emit(ctx, b, () => {
    for (const r of b.resultados) ctx.term.out(r.nuevo_msg_id ? `${r.msg_id}\t${r.nuevo_msg_id}` : `${r.msg_id}\t-\t${r.mensaje ?? ''}`);
    if (ctx.term.io.stderrIsTTY) ctx.term.err(`${b.reintentados} retried (new msg_id beside the old), ${b.rechazados} refused`);
  });
  if (b.rechazados > 0) throw new CliError(`${b.rechazados} not retried`, EXIT.SOME_REFUSED, b);
}

export function registerCola(program: Command, ctxOf: CtxOf): void {
  const cola = program
    .command('cola')
    .description('the pending queued messages in order: when each is due and why it waits; `cola cancel` cancels')
    .option('--celular <id>', 'one line (default: every line the key sees)', int(1))
    .option('--por-pagina <n>', 'how many (1-500)', int(1, 500), 50)
    .option('--despues <seq>', "the page after this place (the previous page's last)", int(0))
    .action((o: ColaOptions, cmd: Command) => runCola(o, ctxOf(cmd)));

  cola
    .command('cancel')
    .description('cancel queued messages (each ends in error, class cancelado, refunded); one being sent is left alone')
    .argument('[msg_id...]', 'the messages to cancel')
    .option('--celular <id>', 'with --all: the line', int(1))
    .option('--all', "every message of the line's queue pending now")
    .option('-y, --yes', 'do not ask for confirmation (--all asks on a TTY)')
    // `cola`'s own --celular takes the flag wherever it stands: read from either.
    .action((msgIds: string[], o: Omit<ColaCancelOptions, 'msgIds'>, cmd: Command) =>
      runColaCancel({ msgIds, ...o, celular: o.celular ?? cmd.parent?.opts<ColaOptions>().celular }, ctxOf(cmd)),
    );

  program
    .command('retry')
    .description('send failed messages again as new queued sends (charged; the new one names the old as reintento_de)')
    .argument('<msg_id...>', 'the failed messages')
    .action((msgIds: string[], _o, cmd: Command) => runRetry(msgIds, ctxOf(cmd)));
}
