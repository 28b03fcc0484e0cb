import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { Command, Option } from 'commander';
import type { Ctx } from '../context.js';
import { CliError, EXIT, usage } from '../exit-codes.js';
import type { CtxOf } from '../main.js';
import { emit } from '../output.js';
import { int, positiveInt } from '../parse.js';

interface SendBody {
  msg_id: string;
  modo: string;
  estado: string;
  gateway_msg_id?: string;
  anti_dupe?: { count: number; max: number };
  saldo: number | null;
}

interface Common {
  directo?: boolean;
  celular?: number;
  retry: number;
}

/** Spanish endpoint names and the per-type base64 field of each media kind. */
const KINDS = {
  image: { path: 'imagen', field: 'imageBase64' },
  document: { path: 'documento', field: 'documentBase64' },
  audio: { path: 'audio', field: 'audioBase64' },
  video: { path: 'video', field: 'videoBase64' },
  sticker: { path: 'sticker', field: 'stickerBase64' },
} as const;
type Kind = keyof typeof KINDS;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Calls the server, retrying up to `retries` times on 429, 5xx and an
 * unreachable server: after `retry_after` when the server gives one, else
 * 1 s, 2 s, 4 s ... (at most 60 s). Other errors are final at once.
 */
export async function withRetry<T>(ctx: Ctx, retries: number, call: () => Promise<T>, wait: (ms: number) => Promise<void> = sleep): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      const retriable = err instanceof CliError && [EXIT.RATE_LIMITED, EXIT.SERVER, EXIT.UNREACHABLE].includes(err.exitCode as 6 | 7 | 8);
      if (!retriable || attempt >= retries) throw err;
      const given = (err.body as { retry_after?: number } | undefined)?.retry_after;
      const ms = given !== undefined ? given * 1000 : Math.min(60_000, 1000 * 2 ** attempt);
      ctx.term.err(`${err.message}; retry ${attempt + 1}/${retries} in ${Math.ceil(ms / 1000)} s`);
      await wait(ms);
    }
  }
}

async function readStdin(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(String(c)));
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

function report(ctx: Ctx, b: SendBody): void {
  emit(ctx, b, () => {
    if (ctx.term.io.stdoutIsTTY) {
      const what = b.modo === 'directo' ? ctx.term.color.green(`sent (gateway id ${b.gateway_msg_id ?? '?'})`) : ctx.term.color.cyan('queued');
      ctx.term.out(`${what}  msg_id ${b.msg_id}${b.anti_dupe ? `  (identical sends: ${b.anti_dupe.count}/${b.anti_dupe.max})` : ''}`);
    } else {
      ctx.term.out([b.msg_id, b.modo, b.estado, b.gateway_msg_id ?? ''].join('\t'));
    }
  });
}

const common = (cmd: Command) =>
  cmd
    .option('--directo', 'send now and wait for the gateway (default: the humanized queue)')
    .option('--celular <id>', 'line to send from (with a client key)', positiveInt)
    .addOption(new Option('--retry <n>', 'retries on 429, 5xx or no connection, honouring retry_after').default(0).argParser(int(0, 10)));

const base = (o: Common, destinatario: string) => ({
  destinatario,
  ...(o.directo ? { directo: 1 } : {}),
  ...(o.celular !== undefined ? { celular_id: o.celular } : {}),
});

/** `pasarela send text|image|document|audio|video|sticker`: one message. */
export function registerSend(program: Command, ctxOf: CtxOf): void {
  const send = program.command('send').description('send a message (queued by default, --directo for now)');

  common(
    send
      .command('text <destinatario> [texto]')
      .description('send a text; TEXTO "-" (or none, off a TTY) reads it from stdin')
      .option('--preview-url', 'show a preview of the first link'),
  ).action(async (destinatario: string, texto: string | undefined, o: Common & { previewUrl?: boolean }, cmd: Command) => {
    const ctx = ctxOf(cmd);
    let mensaje = texto;
    if (mensaje === undefined || mensaje === '-') {
      if (mensaje === undefined && ctx.term.io.stdinIsTTY) throw usage('missing TEXTO (give it, or "-" to read it from stdin)');
      mensaje = await readStdin(ctx.term.io.stdin);
    }
    if (!mensaje) throw usage('the text is empty');
    const key = ctx.key();
    const b = await withRetry(ctx, o.retry, () =>
      ctx.client().call<SendBody>('POST', '/api/mensaje_enviar_texto.php', {
        key,
        json: { ...base(o, destinatario), mensaje, ...(o.previewUrl ? { preview_url: 1 } : {}) },
      }),
    );
    report(ctx, b);
  });

  for (const kind of Object.keys(KINDS) as Kind[]) {
    const cmd = common(
      send
        .command(`${kind} <destinatario> <archivo_o_url>`)
        .description(`send ${kind === 'image' ? 'an image' : kind === 'audio' ? 'audio' : `a ${kind}`}: a local file goes as base64, an http(s) URL by URL`),
    );
    if (kind !== 'sticker' && kind !== 'audio') cmd.option('--caption <texto>', 'caption');
    if (kind === 'document') cmd.option('--filename <nombre>', 'file name shown to the recipient (default: the local file\'s name)');
    if (kind === 'audio') cmd.option('--ptt', 'send as a voice note');
    cmd.action(async (destinatario: string, source: string, o: Common & { caption?: string; filename?: string; ptt?: boolean }, c: Command) => {
      const ctx = ctxOf(c);
      const { path, field } = KINDS[kind];
      const extra = {
        ...(o.caption !== undefined ? { caption: o.caption } : {}),
        ...(o.ptt ? { ptt: 1 } : {}),
      };
      let endpoint: string;
      let body: Record<string, unknown>;
      if (/^https?:\/\//i.test(source)) {
        endpoint = `/api/mensaje_enviar_${path}.php`;
        body = { ...base(o, destinatario), url: source, ...extra, ...(o.filename ? { filename: o.filename } : {}) };
      } else {
        const bytes = await readFile(source).catch((err: NodeJS.ErrnoException) => {
          throw new CliError(`cannot read ${source}: ${err.code === 'ENOENT' ? 'no such file' : err.message}`, EXIT.USAGE);
        });
        endpoint = `/api/mensaje_enviar_${path}_base64.php`;
        body = { ...base(o, destinatario), [field]: bytes.toString('base64'), filename: o.filename ?? basename(source), ...extra };
      }
      const key = ctx.key();
      const b = await withRetry(ctx, o.retry, () => ctx.client().call<SendBody>('POST', endpoint, { key, json: body, timeoutMs: 120_000 }));
      report(ctx, b);
    });
  }
}
