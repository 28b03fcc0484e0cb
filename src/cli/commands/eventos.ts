import { InvalidArgumentError, Option, type Command } from 'commander';
import { STREAM_EVENT_KINDS } from '../../core/events/event-stream.js';
import { completeAs } from '../completion.js';
import type { Ctx } from '../context.js';
import { followEvents, type StreamedEvent } from '../event-follow.js';
import type { CtxOf } from '../main.js';
import { positiveInt } from '../parse.js';
import { truncateWidth } from '../../shared/terminal-text.js';

/**
 * `pasarela eventos`: the client's events from the event stream (docs/design.md
 * §11). Off a terminal (or with --json) one NDJSON line per event, the webhook
 * body as the server sent it (id, evento, fecha, cliente_id, celular_id,
 * data); on one a readable line. Without --follow it prints what the log
 * holds after --desde-id (all of it without) and exits 0.
 */
export interface EventosOptions {
  follow?: boolean;
  eventos?: string[];
  celular?: number;
  desdeId?: string;
}

const KINDS = [...STREAM_EVENT_KINDS, 'all'];

function kinds(value: string): string[] {
  const list = [...new Set(value.split(',').map((v) => v.trim()))].filter(Boolean);
  const bad = list.filter((v) => !KINDS.includes(v));
  if (list.length === 0 || bad.length > 0) throw new InvalidArgumentError(`${bad.length > 0 ? `unknown ${bad.join(', ')}; ` : ''}use ${KINDS.join(', ')}`);
  return list;
}

/** What a person reads of an event: when, its kind, its line and the fields that say what happened. */
function readable(ev: StreamedEvent): string {
  let b: { fecha?: string; celular_id?: number | null; data?: Record<string, unknown> };
  try {
    b = JSON.parse(ev.data) as typeof b;
  } catch {
    return `${ev.evento}  ${ev.data}`;
  }
  const d = b.data ?? {};
  const str = (v: unknown): string => {
    if (v === null || v === undefined) return '-';
    return typeof v === 'string' ? v : JSON.stringify(v);
  };
  const what =
    ev.evento === 'message.status'
      ? `${str(d.msg_id)}  ${str(d.estado_anterior)} -> ${str(d.estado)}${d.error ? `  (${str(d.error)})` : ''}`
      : ev.evento === 'messages.received'
        ? `from ${str(d.de)}: ${truncateWidth(str(d.texto ?? d.tipo).replace(/\s+/g, ' '), 60)}`
        : ev.evento === 'session.status'
          ? `${str(d.status_anterior)} -> ${str(d.status)} (${str(d.estado)})`
          : JSON.stringify(d);
  const line = b.celular_id === null || b.celular_id === undefined ? '' : `celular ${b.celular_id}  `;
  return `${str(b.fecha)}  ${ev.evento.padEnd(17)}  ${line}${what}  ${ev.id}`;
}

export async function runEventos(o: EventosOptions, ctx: Ctx): Promise<void> {
  const lines = ctx.json || !ctx.term.io.stdoutIsTTY;
  if (!lines && o.follow) ctx.term.err('following events; Ctrl-C to stop');
  await followEvents(ctx, { follow: Boolean(o.follow), eventos: o.eventos?.join(','), celular: o.celular, desdeId: o.desdeId }, (ev) =>
    ctx.term.out(lines ? ev.data : readable(ev)),
  );
}

export function registerEventos(program: Command, ctxOf: CtxOf): void {
  program
    .command('eventos')
    .description("the client's events (the event stream): NDJSON off a terminal, readable lines on one")
    .option('-f, --follow', 'keep reading as events happen (a dropped connection resumes where it stopped)')
    .addOption(completeAs(new Option('--eventos <list>', `comma list of ${KINDS.join(', ')} (default all)`), { words: KINDS, list: true }).argParser(kinds))
    .option('--celular <id>', "only this line's events (a celular key sees its own line only)", positiveInt)
    .option('--desde-id <id>', 'start after this event id (the last one a previous run printed)')
    .action((o: EventosOptions, cmd: Command) => runEventos(o, ctxOf(cmd)));
}
