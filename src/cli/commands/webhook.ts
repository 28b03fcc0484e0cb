import { Command, InvalidArgumentError, Option } from 'commander';
import { API } from '../../core/api/api-routes.js';
import { FIELD_LIMITS } from '../../core/api/limits.js';
import type { EntregaView } from '../../core/api/views.js';
import { WEBHOOK_SECRET_RULE, webhookSecretProblem } from '../../core/events/webhook-secret.js';
import { completeAs } from '../completion.js';
import { confirmOrYes } from '../confirm.js';
import type { Ctx } from '../context.js';
import { usage } from '../exit-codes.js';
import type { CtxOf } from '../main.js';
import { emit, painted, printFields, printSecret, printTable, type Cell } from '../output.js';
import { checkArg, httpUrl, int, token } from '../parse.js';
import { generateSecret } from '../../webhooks/sign.js';
import { listen, ListenerUnreachable, type WebhookView } from '../webhook-listen.js';
import { listenByStream } from '../webhook-listen-stream.js';

/** The server's delivery shape (a type-only import: nothing of the server is loaded). */
type Entrega = EntregaView;

const KINDS = ['messages.received', 'message.status', 'session.status', 'celular.frenado', 'celular.reanudado', 'all'];

/** `--secret`: the server's rule (core/events/webhook-secret.ts), so a refused secret is a usage error (exit 2) before any request. */
function webhookSecret(value: string): string {
  const problem = webhookSecretProblem(value);
  if (problem) throw new InvalidArgumentError(problem);
  return value;
}

/** `--eventos a,b`: known kinds only (a typo is a usage error, exit 2). */
function eventos(value: string): string[] {
  const list = [
    ...new Set(
      value
        .split(',')
        .map((v) => v.trim())
        .filter(Boolean),
    ),
  ];
  if (list.length === 0) throw new InvalidArgumentError(`give one or more of ${KINDS.join(', ')}`);
  const bad = list.filter((v) => !KINDS.includes(v));
  if (bad.length > 0) throw new InvalidArgumentError(`unknown ${bad.join(', ')}; use ${KINDS.join(', ')}`);
  return list.includes('all') ? ['all'] : list;
}

function viewFields(ctx: Ctx, b: WebhookView): Array<[string, Cell]> {
  const c = ctx.term.color;
  if (!b.configurado)
    return [
      ['configurado', false],
      ['cliente_id', b.cliente_id],
    ];
  return [
    ['configurado', true],
    ['cliente_id', b.cliente_id],
    ['url', b.url],
    ['eventos', b.eventos.join(',')],
    ['secret', b.has_secret ? 'set' : painted('none (deliveries are not signed)', c.yellow)],
    ['activo', b.activo ? painted('true', c.green) : painted('false', c.red)],
    ['updated_at', b.updated_at],
  ];
}

const showView = (ctx: Ctx, b: WebhookView) =>
  emit(ctx, b, () => {
    if (!b.configurado && ctx.term.io.stdoutIsTTY) ctx.term.err('No webhook configured. Set one with: pasarela webhook set URL --generate-secret');
    printFields(ctx.term, viewFields(ctx, b));
  });

function estadoPaint(ctx: Ctx, e: string): (text: string) => string {
  const c = ctx.term.color;
  return e === 'entregado' ? c.green : e === 'fallido' ? c.red : c.yellow;
}
const estadoColor = (ctx: Ctx, e: string): string => estadoPaint(ctx, e)(e);

export async function runWebhookGet(ctx: Ctx): Promise<void> {
  showView(ctx, await ctx.client().call<WebhookView>('GET', API.webhook, { key: ctx.key() }));
}

export interface WebhookSetOptions {
  url: string;
  secret?: string;
  generateSecret?: boolean;
  eventos: string[];
  inactivo?: boolean;
}

export async function runWebhookSet(o: WebhookSetOptions, ctx: Ctx): Promise<void> {
  const { url } = o;
  if (o.secret !== undefined && o.generateSecret) throw usage('give --secret or --generate-secret, not both');
  if (url.trim() === '') throw usage('the URL is empty');
  checkArg('url', url, httpUrl(FIELD_LIMITS.url));
  const secret = o.generateSecret ? generateSecret() : o.secret;
  const b = await ctx.client().call<WebhookView>('POST', API.webhook, {
    key: ctx.key(),
    json: { url, ...(secret !== undefined ? { secret } : {}), eventos: o.eventos, activo: !o.inactivo },
    fields: { url: '<url>', secret: '--secret', eventos: '--eventos', activo: '--inactivo' },
  });
  // The generated secret exists nowhere else: it goes into the JSON too.
  emit(ctx, o.generateSecret ? { ...b, secret } : b, () => {
    printFields(ctx.term, viewFields(ctx, b));
    if (o.generateSecret && secret) printSecret(ctx.term, 'secret', secret);
    if (b.aviso) ctx.term.err(`warning: ${b.aviso}`);
  });
}

export interface WebhookDeleteOptions {
  yes?: boolean;
}

export async function runWebhookDelete(o: WebhookDeleteOptions, ctx: Ctx): Promise<void> {
  if (!(await confirmOrYes(ctx, o.yes, () => 'Remove the webhook? Events stop being delivered.', 'nothing deleted'))) return;
  const b = await ctx.client().call<WebhookView & { eliminado: boolean }>('DELETE', API.webhook, { key: ctx.key() });
  emit(ctx, b, () => ctx.term.err(b.eliminado ? 'Webhook removed.' : 'No webhook was configured; nothing removed.'));
}

export async function runWebhookRestore(ctx: Ctx): Promise<void> {
  const b = await ctx.client().call<WebhookView>('POST', API.webhookRestaurar, { key: ctx.key() });
  showView(ctx, b);
}

export async function runWebhookTest(ctx: Ctx): Promise<void> {
  const b = await ctx.client().call<{ id: string }>('POST', API.webhookTest, { key: ctx.key() });
  emit(ctx, b, () => {
    ctx.term.out(b.id);
    if (ctx.term.io.stderrIsTTY) ctx.term.err('Queued a webhook.test event; follow it with: pasarela webhook deliveries');
  });
}

export interface WebhookDeliveriesOptions {
  limit: number;
}

export async function runWebhookDeliveries(o: WebhookDeliveriesOptions, ctx: Ctx): Promise<void> {
  const b = await ctx.client().call<{ entregas: Entrega[] }>('GET', API.webhookEntregas, { key: ctx.key(), query: { limit: o.limit } });
  emit(ctx, b, () =>
    printTable(
      ctx.term,
      ['id', 'evento', 'estado', 'intentos', 'ultimo status', 'creado', 'proximo intento', 'ultimo error'],
      b.entregas.map((e) => {
        const last = e.intentos_detalle[e.intentos_detalle.length - 1];
        return [
          e.id,
          e.evento,
          painted(e.estado, estadoPaint(ctx, e.estado)),
          e.intentos,
          last?.status ?? (last ? 'none' : ''),
          e.created_at,
          e.estado === 'pendiente' ? e.proximo_intento_at : '',
          e.ultimo_error,
        ];
      }),
    ),
  );
}

export interface WebhookRedeliverOptions {
  id?: string;
  failed?: boolean;
  evento?: string;
  limit?: number;
}

export async function runWebhookRedeliver(o: WebhookRedeliverOptions, ctx: Ctx): Promise<void> {
  if (o.failed) return runWebhookRedeliverFailed(o, ctx);
  const { id } = o;
  if (id === undefined) throw usage('give a delivery id, or --failed for every failed delivery');
  if (id.trim() === '') throw usage('the delivery id is empty');
  if (id.length > 64) throw usage(`the delivery id "${id.slice(0, 70)}..." is longer than 64 characters; \`pasarela webhook deliveries\` lists the ids`);
  const b = await ctx.client().call<{ id: string; estado: string }>('POST', API.webhookReenviar, { key: ctx.key(), query: { id } });
  emit(ctx, b, () => {
    if (ctx.term.io.stdoutIsTTY) ctx.term.out(`Redelivering ${b.id} (estado ${estadoColor(ctx, b.estado)}).`);
    else ctx.term.out(`${b.id}\t${b.estado}`);
  });
}

/** `webhook redeliver --failed [--evento E] [--limit N]`: a batch of failed deliveries due again (POST /api/webhook_reenviar_fallidas.php). */
async function runWebhookRedeliverFailed(o: WebhookRedeliverOptions, ctx: Ctx): Promise<void> {
  if (o.id !== undefined) throw usage('give a delivery id or --failed, not both');
  const b = await ctx.client().call<{ reprogramadas: number; quedan: boolean; ids: string[] }>('POST', API.webhookReenviarFallidas, {
    key: ctx.key(),
    json: { estado: 'fallido', ...(o.evento ? { evento: o.evento } : {}), ...(o.limit ? { limit: o.limit } : {}) },
  });
  emit(ctx, b, () => {
    for (const id of b.ids) ctx.term.out(id);
    ctx.term.err(`${b.reprogramadas} failed deliveries due again${b.quedan ? '; more remain: run it again' : ''}.`);
  });
}

export interface WebhookListenOptions {
  port: number;
  forwardTo?: string;
  eventos: string[];
  printSecret?: boolean;
  stream?: boolean;
  secret?: string;
}

/** Checks --forward-to, then listens until a signal or the reader goes away (see webhook-listen.ts). */
export async function runWebhookListen(o: WebhookListenOptions, ctx: Ctx): Promise<void> {
  if (o.forwardTo !== undefined) {
    let ok = false;
    try {
      ok = /^https?:$/.test(new URL(o.forwardTo).protocol);
    } catch {
      ok = false;
    }
    if (!ok) throw usage(`--forward-to "${o.forwardTo}" is not an http(s) URL`);
  }
  const byStream = () => listenByStream(ctx, { forwardTo: o.forwardTo, eventos: o.eventos, secret: o.secret, printSecret: Boolean(o.printSecret) });
  if (o.stream || o.secret !== undefined) return byStream();
  try {
    await listen(ctx, { port: o.port, forwardTo: o.forwardTo, eventos: o.eventos, printSecret: Boolean(o.printSecret) });
  } catch (err) {
    // The server cannot deliver to this machine (it runs elsewhere): the stream needs no inbound connection.
    if (!(err instanceof ListenerUnreachable)) throw err;
    ctx.term.err(`${err.message.split('. ')[0]}; following the event stream instead.`);
    await byStream();
  }
}

/** `pasarela webhook ...`: the client's webhook (docs/design.md §7) and a local receiver for trying it. */
export function registerWebhook(program: Command, ctxOf: CtxOf): void {
  const wh = program.command('webhook').description("the client's webhook: show, set, delete, test, deliveries, listen locally");

  wh.command('get')
    .description('the current webhook configuration')
    .action((_o, cmd: Command) => runWebhookGet(ctxOf(cmd)));

  wh.command('set <url>')
    .description('point the webhook at URL (the configuration it replaces is kept: `webhook restore` puts it back)')
    .option('--secret <secret>', `signing secret: ${WEBHOOK_SECRET_RULE} (checked here before sending)`, webhookSecret)
    .option('--generate-secret', 'make a random secret (32 bytes, base64url) and print it once')
    .addOption(
      completeAs(new Option('--eventos <list>', `comma list of ${KINDS.join(', ')}`), { words: KINDS, list: true })
        .default(['all'], 'all')
        .argParser(eventos),
    )
    .option('--inactivo', 'save it switched off (no deliveries)')
    .action((url: string, o: Omit<WebhookSetOptions, 'url'>, cmd: Command) => runWebhookSet({ url, ...o }, ctxOf(cmd)));

  wh.command('delete')
    .description('remove the webhook (`webhook restore` puts it back); asks first on a TTY')
    .option('-y, --yes', 'do not ask for confirmation')
    .action((o: WebhookDeleteOptions, cmd: Command) => runWebhookDelete(o, ctxOf(cmd)));

  wh.command('restore')
    .description(
      'put back the configuration the last set or delete replaced (also what a killed `webhook listen` of an older pasarela, which replaced the webhook, left behind)',
    )
    .action((_o, cmd: Command) => runWebhookRestore(ctxOf(cmd)));

  wh.command('test')
    .description('send a signed webhook.test event to the configured URL (through the real outbox) and a copy to each live listener (`webhook listen`)')
    .action((_o, cmd: Command) => runWebhookTest(ctxOf(cmd)));

  wh.command('deliveries')
    .description('recent deliveries, newest first, with their attempts')
    .addOption(new Option('--limit <n>', 'how many (1-500)').default(20).argParser(int(1, 500)))
    .action((o: WebhookDeliveriesOptions, cmd: Command) => runWebhookDeliveries(o, ctxOf(cmd)));

  wh.command('redeliver [id]')
    .description('deliver one event again now (same id); --failed: every failed delivery, a batch (up to 500) at a time')
    .option('--failed', 'every failed delivery (oldest first) instead of one id')
    .option('--evento <name>', 'with --failed: only deliveries of this event (message.status, messages.received, session.status...)')
    .addOption(new Option('--limit <n>', 'with --failed: how many at most (1-500)').argParser(int(1, 500)))
    .action((id: string | undefined, o: Omit<WebhookRedeliverOptions, 'id'>, cmd: Command) => runWebhookRedeliver({ id, ...o }, ctxOf(cmd)));

  wh.command('listen')
    .description(
      'receive copies of the events here: a local receiver registered as a temporary listener beside the webhook (which is left as it is and keeps receiving); ' +
        'it checks signatures with its own secret, prints and optionally forwards each event, and is removed on Ctrl-C (expires by itself within 30 s if killed); ' +
        'the server must run on this machine',
    )
    .addOption(new Option('--port <n>', 'port on 127.0.0.1 (0: any free port)').default(0).argParser(int(0, 65535)))
    .option('--forward-to <url>', 'POST each verified event (same body and headers) to this URL and answer with its status')
    .addOption(
      completeAs(new Option('--eventos <list>', `comma list of ${KINDS.join(', ')}`), { words: KINDS, list: true })
        .default(['all'], 'all')
        .argParser(eventos),
    )
    .option('--print-secret', "show the listener's signing secret (made by the server for this listen) in the Ready line")
    .option(
      '--stream',
      'follow the event stream instead of receiving deliveries: no inbound connection, so it works with a remote server (also chosen when the server cannot reach this machine)',
    )
    .option(
      '--secret <secret>',
      "with --stream: sign forwarded events with this secret (your app's), so its signature check passes unchanged; implies --stream",
      token(1, FIELD_LIMITS.webhookSecret),
    )
    .action((o: WebhookListenOptions, cmd: Command) => runWebhookListen(o, ctxOf(cmd)));
}
