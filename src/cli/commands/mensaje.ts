import type { Command } from 'commander';
import { API } from '../../core/api/api-routes.js';
import type { Ctx } from '../context.js';
import type { CtxOf } from '../main.js';
import { emit, painted, printFields, printTable } from '../output.js';
import { detalleText, nodoCorto, type Story } from '../../core/history/message-story.js';
import type { Mensaje } from './historial.js';

export interface MensajeOptions {
  timeline?: boolean;
}

/**
 * `pasarela mensaje MSG_ID [--timeline]`: what became of one message (GET
 * /api/mensaje.php), with --timeline its story after it; exit 4 when the
 * credential cannot see it.
 */
export async function runMensaje(msgId: string, ctx: Ctx, opts: MensajeOptions = {}): Promise<void> {
  if (!opts.timeline) return printMensaje(ctx, await fetchMensaje(ctx, msgId));
  const b = await ctx.client().call<{ mensaje: Mensaje } & Story>('GET', API.mensaje, { key: ctx.key(), query: { msg_id: msgId, timeline: '1' } });
  emit(ctx, b, () => {
    mensajeFields(ctx, b.mensaje);
    ctx.term.out('');
    printTable(
      ctx.term,
      ['time', 'step', 'node', 'detail'],
      b.timeline.map((t) => [t.at === null ? '(not recorded)' : utcSecond(t.at), t.paso, t.nodo === null ? '' : nodoCorto(t.nodo), detalleText(t)]),
    );
    if (b.timeline_omitidos > 0) ctx.term.out(`${b.timeline_omitidos} more webhook attempts not listed (GET /api/webhook_entregas.php lists them)`);
  });
}

/** An ISO time to the second, its zone named: the panel's format. */
const utcSecond = (at: string): string => `${at.slice(0, 19).replace('T', ' ')} UTC`;

/** GET /api/mensaje.php: the answer, its record under `mensaje`. */
export function fetchMensaje(ctx: Ctx, msgId: string): Promise<{ mensaje: Mensaje }> {
  return ctx.client().call<{ mensaje: Mensaje }>('GET', API.mensaje, { key: ctx.key(), query: { msg_id: msgId } });
}

/** One record as fields (the answer with --json). */
export function printMensaje(ctx: Ctx, b: { mensaje: Mensaje }): void {
  emit(ctx, b, () => mensajeFields(ctx, b.mensaje));
}

function mensajeFields(ctx: Ctx, m: Mensaje): void {
  const c = ctx.term.color;
  const media = m.media ? [m.media.filename, m.media.mime, m.media.url].filter(Boolean).join(' ') : null;
  printFields(ctx.term, [
    ['msg_id', m.msg_id],
    ['estado', painted(m.estado, m.estado === 'error' ? c.red : m.estado === 'pendiente' ? c.yellow : m.estado === 'leido' ? c.green : (s: string) => s)],
    ...(m.estado === 'error' ? ([['error', `${m.error ?? ''}${m.error_clase ? ` (${m.error_clase})` : ''}`]] as Array<[string, string]>) : []),
    ['celular', m.celular_id],
    ['destinatario', m.destinatario],
    ['tipo', `${m.tipo} (${m.modo})`],
    ['texto', m.texto],
    ...(media ? ([['media', media]] as Array<[string, string]>) : []),
    ['gateway_msg_id', m.gateway_msg_id],
    // A retry names the message it sends again (`pasarela retry`).
    ...(m.reintento_de ? ([['reintento_de', m.reintento_de]] as Array<[string, string]>) : []),
    // A validity: the instant it had to be handed to the gateway by (docs/validity.md).
    ...(m.vigencia_hasta ? ([['vigencia_hasta', m.vigencia_hasta]] as Array<[string, string]>) : []),
    ['created_at', m.created_at],
    // A scheduled send (`send --at`): when it is due.
    ...(m.enviar_en ? ([['enviar_en', m.enviar_en]] as Array<[string, string]>) : []),
    ['enviado_at', m.enviado_at],
    ['entregado_at', m.entregado_at],
    ['leido_at', m.leido_at],
  ]);
}

export function registerMensaje(program: Command, ctxOf: CtxOf): void {
  program
    .command('mensaje')
    .description('one message by the msg_id its send answered: its state, error and times')
    .argument('<msg_id>', 'the id a send printed')
    .option('--timeline', 'then its story: accepted, claimed (node), sent, receipts, charge and refund, every webhook attempt')
    .action((msgId: string, o: MensajeOptions, cmd: Command) => runMensaje(msgId, ctxOf(cmd), o));
}
