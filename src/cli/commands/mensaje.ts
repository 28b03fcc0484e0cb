import type { Command } from 'commander';
import { API } from '../../core/api-routes.js';
import type { Ctx } from '../context.js';
import type { CtxOf } from '../main.js';
import { emit, painted, printFields } from '../output.js';
import type { Mensaje } from './historial.js';

/** `pasarela mensaje MSG_ID`: what became of one message (GET /api/mensaje.php); exit 4 when the credential cannot see it. */
export async function runMensaje(msgId: string, ctx: Ctx): Promise<void> {
  printMensaje(ctx, await fetchMensaje(ctx, msgId));
}

/** GET /api/mensaje.php: the answer, its record under `mensaje`. */
export function fetchMensaje(ctx: Ctx, msgId: string): Promise<{ mensaje: Mensaje }> {
  return ctx.client().call<{ mensaje: Mensaje }>('GET', API.mensaje, { key: ctx.key(), query: { msg_id: msgId } });
}

/** One record as fields (the answer with --json). */
export function printMensaje(ctx: Ctx, b: { mensaje: Mensaje }): void {
  const m = b.mensaje;
  const c = ctx.term.color;
  const media = m.media ? [m.media.filename, m.media.mime, m.media.url].filter(Boolean).join(' ') : null;
  emit(ctx, b, () =>
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
      ['created_at', m.created_at],
      ['enviado_at', m.enviado_at],
      ['entregado_at', m.entregado_at],
      ['leido_at', m.leido_at],
    ]),
  );
}

export function registerMensaje(program: Command, ctxOf: CtxOf): void {
  program
    .command('mensaje')
    .description('one message by the msg_id its send answered: its state, error and times')
    .argument('<msg_id>', 'the id a send printed')
    .action((msgId: string, _o, cmd: Command) => runMensaje(msgId, ctxOf(cmd)));
}
