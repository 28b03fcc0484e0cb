import { toText } from '../../core/api/to-text.js';
import { writeFile } from 'node:fs/promises';
import { Command, Option } from 'commander';
import { API } from '../../core/api/api-routes.js';
import { CELULAR_LIMITS } from '../../core/api/limits.js';
import type { CelularView } from '../../core/api/views.js';
import { WARMUP_PLAN_NAMES } from '../../core/sending/warmup.js';
import { confirmOrYes } from '../confirm.js';
import type { Ctx } from '../context.js';
import { CliError, usage } from '../exit-codes.js';
import { EXIT } from '../../shared/exit-codes.js';
import type { CtxOf } from '../main.js';
import { emit, painted, printFields, printSecret, printTable, type Cell } from '../output.js';
import type { FieldFlags } from '../field-errors.js';
import { checkArg, hora, idArg, int, intOrNone, phone, text } from '../parse.js';
import { showQr, type QrBody } from '../qr-display.js';
import { Watch } from '../watch.js';

/** The server's celular shape (a type-only import: nothing of the server is loaded). */
type Celular = CelularView;

/** API fields of create, link and edit, and the flag or argument that sets each. */
const CELULAR_FIELDS: FieldFlags = {
  numero: '<numero>',
  nombre_interno: '--nombre',
  nombre: '--nombre',
  estado: '--estado',
  max_envios_por_minuto: '--por-minuto',
  max_envios_por_hora: '--por-hora',
  max_envios_por_dia: '--por-dia',
  hora_inicio_permitido: '--desde',
  hora_fin_permitido: '--hasta',
  calentamiento: '--calentamiento',
  freno: '--freno',
  id: '<id>',
};

const nombre = text(0, CELULAR_LIMITS.nombre_interno);
const [MIN_MIN, MAX_MIN] = CELULAR_LIMITS.max_envios_por_minuto;
const [MIN_HORA, MAX_HORA] = CELULAR_LIMITS.max_envios_por_hora;
const [MIN_DIA, MAX_DIA] = CELULAR_LIMITS.max_envios_por_dia;

const estadoColor = (ctx: Ctx, e: string) =>
  painted(e, e === 'activo' ? ctx.term.color.green : e === 'suspendido' ? ctx.term.color.red : ctx.term.color.yellow);

function celularFields(ctx: Ctx, c: Celular): Array<[string, Cell]> {
  return [
    ['id', c.id],
    ['numero', c.numero],
    ['nombre_interno', c.nombre_interno],
    ['estado', estadoColor(ctx, c.estado)],
    ['saldo_actual', c.saldo_actual],
    ['max_envios_por_minuto', c.max_envios_por_minuto],
    ['max_envios_por_hora', c.max_envios_por_hora],
    ['max_envios_por_dia', c.max_envios_por_dia ?? 'unlimited'],
    ...warmupFields(c),
    ['horario', `${c.hora_inicio_permitido}-${c.hora_fin_permitido}`],
    ['gateway_instancia', c.gateway_instancia],
    ['last_status', c.last_status],
    ['last_status_check', c.last_status_check],
    ['tiene_token_legacy', c.tiene_token_legacy],
    ['freno', c.freno ? 'on' : 'off'],
    ['frenado', c.frenado ? `yes: ${c.frenado_motivo ?? ''}` : 'no'],
  ];
}

/** The warm-up plan and today's caps under it, while a plan is set (a server before warm-up sends neither). */
function warmupFields(c: Celular): Array<[string, Cell]> {
  if (c.calentamiento === undefined || c.calentamiento === null) return [];
  const dia = c.calentamiento_dia === null ? 'done' : `day ${c.calentamiento_dia}`;
  return [
    ['calentamiento', `${c.calentamiento} (${dia}, since ${c.calentamiento_desde ?? '?'})`],
    ['efectivo_por_minuto', c.max_envios_por_minuto_efectivo],
    ['efectivo_por_hora', c.max_envios_por_hora_efectivo],
    ['efectivo_por_dia', c.max_envios_por_dia_efectivo ?? 'unlimited'],
  ];
}

const qrWaitOptions = (cmd: Command) =>
  cmd
    .option('--wait', 'without a TTY, keep printing each new QR until the line is connected')
    .option(
      '--invert',
      'draw the QR for a light-background terminal (the default suits light text on a dark background; use this if the phone does not read it)',
    )
    .addOption(
      new Option('--timeout <seconds>', 'give up after this long (exit 11); a server restart meanwhile is ridden out').default(180).argParser(int(1, 3600)),
    )
    .addOption(new Option('--interval <ms>', 'how often to check the session').default(2000).argParser(int(200, 60000)))
    .addHelpText(
      'after',
      [
        '',
        'On a terminal the QR is drawn with a 4-module blank margin: some 55-65 columns',
        'by 30-36 rows. A smaller terminal gets the size it needs and the raw code',
        'instead (a wrapped QR is something no phone reads). The drawing uses the',
        "terminal's own colours, blocks for the light modules: right for light text on",
        'a dark background; with a light background, use --invert.',
      ].join('\n'),
    );

/** The error of a link watch that ran out of time: exit 11. */
const linkTimedOut = (id: number, seconds: number, what: string) => (cause?: string) =>
  new CliError(
    `celular ${id} was not linked within ${seconds} s${cause ? ` (the server was still unreachable: ${cause})` : ''}; run the command again for a new ${what}`,
    EXIT.TIMEOUT,
  );

/** Follows the QR until connected; each poll rides out a server restart (see Watch). */
async function followQr(ctx: Ctx, first: QrBody, o: LinkWaitOptions) {
  const key = ctx.key();
  const watch = new Watch(ctx, { deadline: Date.now() + o.timeout * 1000, timedOut: linkTimedOut(first.celular_id, o.timeout, 'QR') });
  await showQr(ctx, first, {
    fetch: () => watch.call((timeoutMs) => ctx.client().call<QrBody>('POST', API.celularQr, { key, query: { id: first.celular_id }, timeoutMs })),
    wait: Boolean(o.wait),
    invert: Boolean(o.invert),
    notices: watch,
    intervalMs: o.interval,
    timeoutMs: o.timeout * 1000,
  });
}

/**
 * `celular qr ID --png FILE`: asks for the QR image (`imagen=1`) and writes the
 * decoded PNG. Connected: nothing to scan, no file, exit 0. No QR yet (the
 * gateway is still starting the session): no file, exit 9 (ask again shortly).
 */
async function writeQrPng(ctx: Ctx, id: number, file: string): Promise<void> {
  const b = await ctx.client().call<QrBody & { qr_imagen?: string }>('POST', API.celularQr, { key: ctx.key(), query: { id, imagen: 1 } });
  const { qr_imagen: uri = '', ...rest } = b;
  const PREFIX = 'data:image/png;base64,';
  if (!uri) {
    if (b.status === 'connected') {
      if (ctx.json) ctx.term.out(JSON.stringify(rest, null, 2));
      else ctx.term.err(`celular ${b.celular_id} is connected: nothing to scan; ${file} not written`);
      return;
    }
    throw new CliError(`celular ${b.celular_id} has no QR yet (status ${b.status}): ask again shortly; ${file} not written`, EXIT.REFUSED_NOW, rest);
  }
  if (!uri.startsWith(PREFIX)) throw new CliError('the server answered a qr_imagen that is not a PNG data URI', EXIT.SERVER, rest);
  await writeFile(file, Buffer.from(uri.slice(PREFIX.length), 'base64'));
  if (ctx.json) ctx.term.out(JSON.stringify({ ...rest, png: file }, null, 2));
  else ctx.term.err(`QR of celular ${b.celular_id} written to ${file} (PNG); a QR is replaced after a short while: scan it soon`);
}

/**
 * Pairing-code linking: prints the code (stdout, so scripts can take it), then
 * on a TTY or with --wait follows the line's status until it is connected.
 */
async function followCode(ctx: Ctx, first: QrBody & { codigo?: string }, o: { wait?: boolean; timeout: number; interval: number }) {
  const connected = (b: { status: string }) => b.status === 'connected';
  if (ctx.json) ctx.term.out(JSON.stringify(first, null, 2));
  else if (!connected(first)) {
    ctx.term.out(first.codigo ?? '');
    ctx.term.err(
      `On the phone of celular ${first.celular_id}: WhatsApp > Linked devices > Link a device > Link with phone number instead, then type the code above.`,
    );
  }
  if (connected(first)) {
    if (!ctx.json) ctx.term.err(`celular ${first.celular_id} is connected`);
    return;
  }
  if (!ctx.term.io.stdoutIsTTY && !o.wait) return;
  const key = ctx.key();
  const watch = new Watch(ctx, { deadline: Date.now() + o.timeout * 1000, timedOut: linkTimedOut(first.celular_id, o.timeout, 'code') });
  while (watch.alive()) {
    await watch.sleep(o.interval);
    const st = await watch.call((timeoutMs) =>
      ctx.client().call<{ status: string }>('GET', API.celularStatus, { key, query: { id: first.celular_id }, timeoutMs }),
    );
    if (connected(st)) {
      if (ctx.json) ctx.term.out(JSON.stringify(st));
      else ctx.term.err(ctx.term.color.green(`✓ celular ${first.celular_id} is connected`));
      return;
    }
  }
  throw watch.timedOut();
}

export async function runCelularList(ctx: Ctx): Promise<void> {
  const b = await ctx.client().call<{ total: number; celulares: Celular[] }>('GET', API.celulares, { key: ctx.key() });
  emit(ctx, b, () =>
    printTable(
      ctx.term,
      ['id', 'numero', 'nombre', 'estado', 'saldo', 'sesion', 'por min', 'por hora', 'horario'],
      // The caps in force (a warm-up's while it lasts, docs/warm-up.md); the configured ones and the plan's day: `celular show`, --json.
      b.celulares.map((c) => [
        c.id,
        c.numero,
        c.nombre_interno,
        estadoColor(ctx, c.estado),
        c.saldo_actual,
        c.last_status,
        c.max_envios_por_minuto_efectivo ?? c.max_envios_por_minuto,
        c.max_envios_por_hora_efectivo ?? c.max_envios_por_hora,
        `${c.hora_inicio_permitido}-${c.hora_fin_permitido}`,
      ]),
    ),
  );
}

export interface CelularShowOptions {
  id: string;
}

/** The linked phone as the server answers it (`perfil`); null when not connected or the gateway does not say. */
interface Perfil {
  nombre: string | null;
  numero: string | null;
}

/** The phone's name and number as one field; older servers answer no `perfil` at all. */
const perfilCell = (p: Perfil | null | undefined): Cell =>
  p ? [p.nombre, p.numero === null ? null : `+${p.numero}`].filter((x) => x !== null).join(' · ') : null;

export async function runCelularShow(o: CelularShowOptions, ctx: Ctx): Promise<void> {
  const b = await ctx.client().call<{ celular: Celular; perfil?: Perfil | null }>('GET', API.celular, { key: ctx.key(), query: { id: idArg(o.id) } });
  emit(ctx, b, () => printFields(ctx.term, [...celularFields(ctx, b.celular), ['telefono', perfilCell(b.perfil)]]));
}

export interface CelularCreateOptions {
  numero: string;
  nombre?: string;
  /** A warm-up plan's name: it starts today. */
  calentamiento?: string;
  freno?: 'on' | 'off';
}

export async function runCelularCreate(o: CelularCreateOptions, ctx: Ctx): Promise<void> {
  const { numero } = o;
  checkArg('numero', numero, phone());
  const b = await ctx.client().call<{ celular_id: number; celular: Celular; api_key: string; gateway_token: string }>('POST', API.celularCrear, {
    key: ctx.key(),
    json: {
      numero,
      ...(o.nombre !== undefined ? { nombre_interno: o.nombre } : {}),
      ...(o.calentamiento !== undefined ? { calentamiento: o.calentamiento } : {}),
      ...(o.freno !== undefined ? { freno: o.freno === 'on' } : {}),
    },
    fields: CELULAR_FIELDS,
  });
  emit(ctx, b, () => {
    ctx.term.err(`Created celular ${b.celular_id} (${b.celular.numero}), estado ${b.celular.estado}. Link it with: pasarela celular qr ${b.celular_id}`);
    printSecret(ctx.term, 'Celular key', b.api_key);
    printSecret(ctx.term, 'Gateway token', b.gateway_token);
  });
}

export interface CelularEditOptions {
  id: string;
  nombre?: string;
  estado?: string;
  porMinuto?: number;
  porHora?: number;
  porDia?: number | null;
  desde?: string;
  hasta?: string;
  /** A warm-up plan's name, or `none` to end it. */
  calentamiento?: string;
  freno?: 'on' | 'off';
}

export async function runCelularEdit(o: CelularEditOptions, ctx: Ctx): Promise<void> {
  const n = idArg(o.id);
  const body: Record<string, unknown> = {};
  if (o.nombre !== undefined) body.nombre_interno = o.nombre === '' ? null : o.nombre;
  if (o.estado !== undefined) body.estado = o.estado;
  if (o.porMinuto !== undefined) body.max_envios_por_minuto = o.porMinuto;
  if (o.porHora !== undefined) body.max_envios_por_hora = o.porHora;
  if (o.porDia !== undefined) body.max_envios_por_dia = o.porDia;
  if (o.desde !== undefined) body.hora_inicio_permitido = o.desde;
  if (o.hasta !== undefined) body.hora_fin_permitido = o.hasta;
  if (o.calentamiento !== undefined) body.calentamiento = o.calentamiento === 'none' ? null : o.calentamiento;
  if (o.freno !== undefined) body.freno = o.freno === 'on';
  if (Object.keys(body).length === 0)
    throw usage('nothing to change: give at least one of --nombre, --estado, --por-minuto, --por-hora, --por-dia, --desde, --hasta, --calentamiento, --freno');
  const b = await ctx.client().call<{ celular: Celular }>('POST', API.celularEditar, { key: ctx.key(), query: { id: n }, json: body, fields: CELULAR_FIELDS });
  emit(ctx, b, () => printFields(ctx.term, celularFields(ctx, b.celular)));
}

export interface CelularDeleteOptions {
  id: string;
  yes?: boolean;
}

export async function runCelularDelete(o: CelularDeleteOptions, ctx: Ctx): Promise<void> {
  const n = idArg(o.id);
  const sure = await confirmOrYes(
    ctx,
    o.yes,
    async () => {
      // The line is read first: a wrong id is exit 4 before any question, and the question names it.
      const { celular: c } = await ctx.client().call<{ celular: Celular }>('GET', API.celular, { key: ctx.key(), query: { id: n } });
      const label = c.nombre_interno ? ` “${c.nombre_interno}”` : '';
      const numero = /^[0-9]+$/.test(c.numero) ? `+${c.numero}` : c.numero;
      return `Delete celular ${c.id}${label} (${numero})? This cannot be undone: its key stops working and its session is removed.`;
    },
    'nothing deleted',
  );
  if (!sure) return;
  const b = await ctx.client().call<{ celular_id: number; numero: string }>('POST', API.celularEliminar, { key: ctx.key(), query: { id: n } });
  emit(ctx, b, () => ctx.term.err(`Deleted celular ${b.celular_id} (${b.numero}).`));
}

export interface CelularStatusOptions {
  id: string;
}

export async function runCelularStatus(o: CelularStatusOptions, ctx: Ctx): Promise<void> {
  const b = await ctx.client().call<{
    celular_id: number;
    status: string;
    estado: string;
    gateway_instancia: string;
    status_actualizado_desde_gateway: boolean;
    ultimo_check: string;
    perfil?: Perfil | null;
    motor_nodo?: MotorNodo | null;
  }>('GET', API.celularStatus, { key: ctx.key(), query: { id: idArg(o.id) } });
  emit(ctx, b, () =>
    printFields(ctx.term, [
      ['celular', b.celular_id],
      ['status', painted(b.status, b.status === 'connected' ? ctx.term.color.green : ctx.term.color.yellow)],
      ['estado', estadoColor(ctx, b.estado)],
      ['gateway_instancia', b.gateway_instancia],
      ['refreshed', b.status_actualizado_desde_gateway ? 'yes' : 'no (the stored state)'],
      ['ultimo_check', b.ultimo_check],
      ['telefono', perfilCell(b.perfil)],
      // Only the in-process engine answers motor_nodo (D-137).
      ...(b.motor_nodo === undefined ? [] : [['node', nodeCell(b.motor_nodo)] as [string, string]]),
    ]),
  );
}

/** The engine node holding a line's session (the API's motor_nodo), as `celular status` shows it. */
interface MotorNodo {
  id: string;
  etiqueta: string | null;
  presente: boolean;
}

function nodeCell(n: MotorNodo | null): string {
  if (n === null) return 'none (no node holds its session now)';
  return `${n.etiqueta ?? n.id}${n.presente ? '' : ' (gone: another node takes it)'}`;
}

export interface CelularSessionOptions {
  id: string;
  yes?: boolean;
}

/** What a logout or a restart answers. */
interface SessionAnswer {
  celular_id: number;
  status: string;
  estado: string;
  vinculado: boolean;
  celular: Celular;
}

/** `celular logout ID`: ends the line's link at its gateway; asks first on a TTY (linking again needs a new scan), --yes off one. */
export async function runCelularLogout(o: CelularSessionOptions, ctx: Ctx): Promise<void> {
  const n = idArg(o.id);
  const sure = await confirmOrYes(
    ctx,
    o.yes,
    async () => {
      // The line is read first: a wrong id is exit 4 before any question, and the question names it.
      const { celular: c } = await ctx.client().call<{ celular: Celular }>('GET', API.celular, { key: ctx.key(), query: { id: n } });
      const label = c.nombre_interno ? ` “${c.nombre_interno}”` : '';
      return `Log out celular ${c.id}${label} (${c.numero})? Its session ends: linking it again needs a new QR scan or pairing code.`;
    },
    'nothing logged out',
  );
  if (!sure) return;
  const b = await ctx.client().call<SessionAnswer>('POST', API.celularLogout, { key: ctx.key(), query: { id: n } });
  emit(ctx, b, () =>
    ctx.term.err(`Logged out celular ${b.celular_id}: status ${b.status}, estado ${b.estado}. Link it again with: pasarela celular qr ${b.celular_id}`),
  );
}

/** What a resume answers. */
export interface ResumeAnswer {
  celular_id: number;
  reanudado: boolean;
  motivo_anterior: string | null;
  celular: Celular;
}

/** What a resume says on stderr. */
export function resumeSaid(b: ResumeAnswer): string {
  return b.reanudado
    ? `Resumed celular ${b.celular_id} (it was braked: ${b.motivo_anterior ?? 'no reason kept'}); its queue goes on.`
    : `Celular ${b.celular_id} was not braked; its health window starts again.`;
}

/** `celular resume ID` (alias `reanudar`): lifts the line's brake with the client key (or the line's own). */
export async function runCelularResume(o: { id: string }, ctx: Ctx): Promise<void> {
  const b = await ctx.client().call<ResumeAnswer>('POST', API.celularReanudar, { key: ctx.key(), query: { id: idArg(o.id) } });
  emit(ctx, b, () => ctx.term.err(resumeSaid(b)));
}

/** `celular restart ID`: restarts the line's session, keeping its link; nothing to confirm (the line comes back by itself). */
export async function runCelularRestart(o: { id: string }, ctx: Ctx): Promise<void> {
  const b = await ctx.client().call<SessionAnswer>('POST', API.celularReiniciar, { key: ctx.key(), query: { id: idArg(o.id) } });
  emit(ctx, b, () =>
    ctx.term.err(
      b.status === 'need_scan'
        ? `Restarted celular ${b.celular_id}: it was not linked, a new QR is waiting (pasarela celular qr ${b.celular_id}).`
        : `Restarted celular ${b.celular_id}: status ${b.status}; it connects again by itself (pasarela celular status ${b.celular_id}).`,
    ),
  );
}

/** How a link is followed: the flags of qrWaitOptions. */
export interface LinkWaitOptions {
  wait?: boolean;
  invert?: boolean;
  timeout: number;
  interval: number;
}

export interface CelularQrOptions extends LinkWaitOptions {
  id: string;
  png?: string;
}

export async function runCelularQr(o: CelularQrOptions, ctx: Ctx): Promise<void> {
  if (o.png !== undefined) {
    if (o.wait) throw usage('--png writes the QR showing now and exits; it does not go with --wait');
    if (!o.png) throw usage('--png: a file name is required');
    await writeQrPng(ctx, idArg(o.id), o.png);
    return;
  }
  const first = await ctx.client().call<QrBody>('POST', API.celularQr, { key: ctx.key(), query: { id: idArg(o.id) } });
  await followQr(ctx, first, o);
}

export interface CelularLinkOptions extends LinkWaitOptions {
  numero: string;
  nombre?: string;
  pairingCode?: boolean;
}

export async function runCelularLink(o: CelularLinkOptions, ctx: Ctx): Promise<void> {
  const { numero } = o;
  checkArg('numero', numero, phone());
  type Linked = QrBody & { creado: boolean; api_key?: string; codigo?: string; aviso?: string };
  const first = await ctx.client().call<Linked>('POST', o.pairingCode ? API.celularVincularCodigo : API.celularVincularQr, {
    key: ctx.key(),
    json: { numero, ...(o.nombre !== undefined ? { nombre: o.nombre } : {}) },
    fields: CELULAR_FIELDS,
  });
  if (!ctx.json) {
    ctx.term.err(
      first.creado
        ? `Registered celular ${first.celular_id} (${toText(first.numero ?? numero)}).`
        : `Celular ${first.celular_id} already registered; linking it.`,
    );
    // On stdout like `celular create`: the one time the key is shown, a script must be able to keep it.
    if (first.api_key) printSecret(ctx.term, 'Celular key', first.api_key);
  }
  // Registered (its key is above) but the gateway did not start the link: there is no QR or code to show or follow.
  if (first.aviso) throw new CliError(first.aviso, EXIT.SERVER, first);
  if (o.pairingCode) await followCode(ctx, first, o);
  else await followQr(ctx, first, o);
}

/** `pasarela celular ...`: the client's phone lines. */
export function registerCelular(program: Command, ctxOf: CtxOf): void {
  const cel = program.command('celular').description('phone lines: list, create, edit, delete, link by QR, status, log out, restart');

  cel
    .command('list')
    .description("the client's celulares")
    .action((_o, cmd: Command) => runCelularList(ctxOf(cmd)));

  cel
    .command('show <id>')
    .description('one celular')
    .action((id: string, _o, cmd: Command) => runCelularShow({ id }, ctxOf(cmd)));

  cel
    .command('create <numero>')
    .description('register a line (country code first); prints its key once')
    .option('--nombre <nombre>', 'internal label (nombre_interno, up to 80 characters)', nombre)
    .addOption(calentamientoOption(WARMUP_PLAN_NAMES, 'it starts today'))
    .addOption(frenoOption())
    .action((numero: string, o: Omit<CelularCreateOptions, 'numero'>, cmd: Command) => runCelularCreate({ numero, ...o }, ctxOf(cmd)));

  cel
    .command('edit <id>')
    .description('change label, state, caps or allowed hours')
    .option('--nombre <nombre>', `internal label, up to ${CELULAR_LIMITS.nombre_interno} characters (empty string clears it)`, nombre)
    .addOption(new Option('--estado <estado>', 'line state (client key only)').choices(['activo', 'suspendido', 'desconectado']))
    .option('--por-minuto <n>', `max sends per minute (${MIN_MIN}-${MAX_MIN})`, int(MIN_MIN, MAX_MIN))
    .option('--por-hora <n>', `max sends per hour (${MIN_HORA}-${MAX_HORA})`, int(MIN_HORA, MAX_HORA))
    .option('--por-dia <n>', `max sends per day (${MIN_DIA}-${MAX_DIA}, or none)`, intOrNone(MIN_DIA, MAX_DIA))
    .option('--desde <HH:MM>', 'start of the allowed sending window (H:MM or HH:MM, 00:00-23:59)', hora)
    .option('--hasta <HH:MM>', 'end of the allowed sending window (H:MM or HH:MM, 00:00-23:59)', hora)
    .addOption(calentamientoOption([...WARMUP_PLAN_NAMES, 'none'], 'none ends it'))
    .addOption(frenoOption())
    .action((id: string, o: Omit<CelularEditOptions, 'id'>, cmd: Command) => runCelularEdit({ id, ...o }, ctxOf(cmd)));

  cel
    .command('resume <id>')
    .alias('reanudar')
    .description('resume a braked line: its queue goes on and its health window starts again')
    .action((id: string, _o, cmd: Command) => runCelularResume({ id }, ctxOf(cmd)));

  cel
    .command('delete <id>')
    .description('delete a line for good (audited); asks first on a TTY, naming it')
    .option('-y, --yes', 'do not ask for confirmation')
    .action((id: string, o: { yes?: boolean }, cmd: Command) => runCelularDelete({ id, ...o }, ctxOf(cmd)));

  cel
    .command('status <id>')
    .description("session status, refreshed from the gateway, and the linked phone's name and number")
    .action((id: string, _o, cmd: Command) => runCelularStatus({ id }, ctxOf(cmd)));

  cel
    .command('logout <id>')
    .description("log out the line's session at the gateway (linking again needs a new scan); asks first on a TTY")
    .option('-y, --yes', 'do not ask for confirmation')
    .action((id: string, o: { yes?: boolean }, cmd: Command) => runCelularLogout({ id, ...o }, ctxOf(cmd)));

  cel
    .command('restart <id>')
    .description("restart the line's session at the gateway, keeping its link: it reconnects by itself")
    .action((id: string, _o, cmd: Command) => runCelularRestart({ id }, ctxOf(cmd)));

  qrWaitOptions(
    cel
      .command('qr <id>')
      .description('link a line: draws the QR on a TTY and follows it until connected; prints the QR content otherwise')
      .option('--png <file>', 'write the QR showing now to FILE as a PNG image and exit (not with --wait)'),
  ).action((id: string, o: Omit<CelularQrOptions, 'id'>, cmd: Command) => runCelularQr({ id, ...o }, ctxOf(cmd)));

  qrWaitOptions(
    cel
      .command('link <numero>')
      .description('register a number (or reuse yours) and link it in one step, by QR or by pairing code (client key)')
      .option('--nombre <nombre>', 'internal label (up to 80 characters)', nombre)
      .option('--pairing-code', 'link by typing a code on the phone (Linked devices > Link with phone number) instead of scanning a QR'),
  ).action((numero: string, o: Omit<CelularLinkOptions, 'numero'>, cmd: Command) => runCelularLink({ numero, ...o }, ctxOf(cmd)));
}

/** `--calentamiento`, at create and edit. */
function calentamientoOption(choices: readonly string[], end: string): Option {
  return new Option('--calentamiento <plan>', `warm-up plan: caps rise day by day to the ones set (docs/warm-up.md); ${end}`).choices(choices);
}

/** `--freno`, at create and edit. */
function frenoOption(): Option {
  return new Option('--freno <on|off>', "the line's brake: on, a crossed health threshold pauses its queue until resumed (docs/brake.md)").choices([
    'on',
    'off',
  ]);
}
