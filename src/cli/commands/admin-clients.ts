import type { clienteSummary } from '../../core/accounts/accounts.js';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { API, pathTo } from '../../core/api/api-routes.js';
import { confirmOrYes } from '../confirm.js';
import type { Ctx } from '../context.js';
import { usage } from '../exit-codes.js';
import type { CtxOf } from '../main.js';
import { adminCall as call } from '../operator.js';
import { registerAdminMovements } from './movimientos.js';
import { emit, printFields, printSecret, printTable, type Cell } from '../output.js';
import { email, idArg, int, intOrNone, positiveInt, text } from '../parse.js';

/** A client as the operator's API shows it. */
export type ClienteSummary = Awaited<ReturnType<typeof clienteSummary>>;

function summaryFields(s: ClienteSummary): Array<[string, Cell]> {
  return [
    ['id', s.cliente.id],
    ['nombre', s.cliente.nombre],
    ['email', s.cliente.email],
    ['estado', s.cliente.estado],
    ['plan', s.cliente.plan],
    ['max_celulares', s.cliente.max_celulares ?? 'unlimited'],
    ['saldo_global', s.saldo_global],
    ['celulares', `${s.num_celulares} (${s.num_celulares_activos} active)`],
    ['consumo_mes_actual', s.cliente.consumo_mes_actual],
    ['mensajes_30d', s.mensajes_30d],
    ['created_at', s.cliente.created_at],
  ];
}

export interface ClientCreateOptions {
  nombre: string;
  email: string;
  plan: string;
  maxCelulares?: number;
  saldo?: number;
}

export async function runClientCreate(o: ClientCreateOptions, ctx: Ctx): Promise<void> {
  const b = await call<ClienteSummary & { api_key: string }>(ctx, 'POST', API.adminClientes, {
    nombre: o.nombre,
    email: o.email,
    plan: o.plan,
    ...(o.maxCelulares !== undefined ? { max_celulares: o.maxCelulares } : {}),
    ...(o.saldo !== undefined ? { saldo: o.saldo } : {}),
  });
  emit(ctx, b, () => {
    ctx.term.err(`Created client ${b.cliente.id} (${b.cliente.nombre}), plan ${b.cliente.plan}, saldo ${b.saldo_global}.`);
    printSecret(ctx.term, 'Client key', b.api_key);
  });
}

export async function runClientList(ctx: Ctx): Promise<void> {
  const b = await call<{ clientes: ClienteSummary[] }>(ctx, 'GET', API.adminClientes);
  emit(ctx, b, () =>
    printTable(
      ctx.term,
      ['id', 'nombre', 'email', 'estado', 'plan', 'saldo', 'celulares', 'consumo mes'],
      b.clientes.map((c) => [
        c.cliente.id,
        c.cliente.nombre,
        c.cliente.email,
        c.cliente.estado,
        c.cliente.plan,
        c.saldo_global,
        c.num_celulares,
        c.cliente.consumo_mes_actual,
      ]),
    ),
  );
}

export interface ClientShowOptions {
  id: string;
}

export async function runClientShow(o: ClientShowOptions, ctx: Ctx): Promise<void> {
  const b = await call<
    ClienteSummary & {
      celulares: Array<{
        id: number;
        numero: string;
        estado: string;
        saldo_actual: number;
        last_status: string | null;
        servidor?: string | null;
        motor_nodo?: { id: string; etiqueta: string | null } | null;
      }>;
    }
  >(ctx, 'GET', pathTo(API.adminCliente, { id: idArg(o.id) }));
  emit(ctx, b, () => {
    printFields(ctx.term, summaryFields(b));
    if (b.celulares.length > 0) {
      ctx.term.out('');
      // The node holding each line's session only with the in-process engine, which answers motor_nodo (D-137).
      const engine = b.celulares.some((c) => c.motor_nodo !== undefined);
      printTable(
        ctx.term,
        ['celular', 'numero', 'estado', 'saldo', 'sesion', 'servidor', ...(engine ? ['nodo'] : [])],
        b.celulares.map((c) => [
          c.id,
          c.numero,
          c.estado,
          c.saldo_actual,
          c.last_status,
          c.servidor ?? null,
          ...(engine ? [c.motor_nodo ? (c.motor_nodo.etiqueta ?? c.motor_nodo.id) : null] : []),
        ]),
      );
    }
  });
}

export interface ClientEditOptions {
  id: string;
  nombre?: string;
  email?: string;
  plan?: string;
  estado?: string;
  maxCelulares?: number | null;
}

export async function runClientEdit(o: ClientEditOptions, ctx: Ctx): Promise<void> {
  const body: Record<string, unknown> = {};
  if (o.nombre !== undefined) body.nombre = o.nombre;
  if (o.email !== undefined) body.email = o.email;
  if (o.plan !== undefined) body.plan = o.plan;
  if (o.estado !== undefined) body.estado = o.estado;
  if (o.maxCelulares !== undefined) body.max_celulares = o.maxCelulares;
  if (Object.keys(body).length === 0) throw usage('nothing to change: give at least one of --nombre, --email, --plan, --estado, --max-celulares');
  const b = await call<ClienteSummary>(ctx, 'PATCH', pathTo(API.adminCliente, { id: idArg(o.id) }), body);
  emit(ctx, b, () => printFields(ctx.term, summaryFields(b)));
}

export interface ClientRotateKeyOptions {
  id: string;
  yes?: boolean;
}

export async function runClientRotateKey(o: ClientRotateKeyOptions, ctx: Ctx): Promise<void> {
  const n = idArg(o.id);
  const sure = await confirmOrYes(ctx, o.yes, async () => {
    // Named in the question (and a wrong id is exit 4 before it).
    const c = (await call<ClienteSummary>(ctx, 'GET', pathTo(API.adminCliente, { id: n }))).cliente;
    return `Rotate the key of client ${c.id} “${c.nombre}” (${c.email})? Its current key stops working at once, for every script that uses it.`;
  });
  if (!sure) return;
  const b = await call<{ cliente_id: number; api_key: string }>(ctx, 'POST', pathTo(API.adminClienteRotarKey, { id: n }));
  emit(ctx, b, () => printSecret(ctx.term, 'Client key', b.api_key));
}

/** --monto: an amount of credits; 0 would change nothing and the server refuses it. */
function nonZero(value: string): number {
  const n = int(-1_000_000_000, 1_000_000_000)(value);
  if (n === 0) throw new InvalidArgumentError('must not be 0 (negative amounts remove credit)');
  return n;
}

export interface BalanceAddOptions {
  cliente: number;
  celular?: number;
  monto: number;
  motivo?: string;
}

export async function runBalanceAdd(o: BalanceAddOptions, ctx: Ctx): Promise<void> {
  const b = await call<{ cliente_id: number; celular_id: number | null; saldo_global: number; saldo_celular: number | null; movimiento_id: number }>(
    ctx,
    'POST',
    API.adminSaldo,
    {
      cliente_id: o.cliente,
      ...(o.celular !== undefined ? { celular_id: o.celular } : {}),
      monto: o.monto,
      ...(o.motivo !== undefined ? { motivo: o.motivo } : {}),
    },
  );
  emit(ctx, b, () =>
    printFields(ctx.term, [
      ['cliente', b.cliente_id],
      ['saldo_global', b.saldo_global],
      ...(b.celular_id !== null
        ? ([
            ['celular', b.celular_id],
            ['saldo_celular', b.saldo_celular],
          ] as Array<[string, Cell]>)
        : []),
      ['movimiento', b.movimiento_id],
    ]),
  );
}

/** `admin client ...`, `admin balance add` and `admin balance movements`. */
export function registerAdminClients(admin: Command, ctxOf: CtxOf): void {
  const client = admin.command('client').description('client accounts');
  client
    .command('create')
    .description('create a client; prints its key (WAC_...) once')
    .requiredOption('--nombre <nombre>', 'name (up to 200 characters)', text(1, 200))
    .requiredOption('--email <email>', 'contact email', email)
    .addOption(new Option('--plan <plan>', 'plan').choices(['medido', 'ilimitado']).default('medido'))
    .option('--max-celulares <n>', 'cap on celulares (default: none)', int(0, 100000))
    .option('--saldo <n>', 'initial global balance', int(0, 1_000_000_000))
    .action((o: ClientCreateOptions, cmd: Command) => runClientCreate(o, ctxOf(cmd)));

  client
    .command('list')
    .description('every client')
    .action((_o, cmd: Command) => runClientList(ctxOf(cmd)));

  client
    .command('show <id>')
    .description('one client and its celulares')
    .action((id: string, _o, cmd: Command) => runClientShow({ id }, ctxOf(cmd)));

  client
    .command('edit <id>')
    .description('change name, email, plan, state or cap')
    .option('--nombre <nombre>', 'name (up to 200 characters)', text(1, 200))
    .option('--email <email>', 'contact email', email)
    .addOption(new Option('--plan <plan>', 'plan').choices(['medido', 'ilimitado']))
    .addOption(new Option('--estado <estado>', 'state').choices(['activo', 'suspendido', 'baja']))
    .option('--max-celulares <n>', 'cap on celulares, or none', intOrNone(0, 100000))
    .action((id: string, o: Omit<ClientEditOptions, 'id'>, cmd: Command) => runClientEdit({ id, ...o }, ctxOf(cmd)));

  client
    .command('rotate-key <id>')
    .description('issue a new client key; the old one stops working at once (asks first on a TTY)')
    .option('-y, --yes', 'do not ask for confirmation')
    .action((id: string, o: { yes?: boolean }, cmd: Command) => runClientRotateKey({ id, ...o }, ctxOf(cmd)));

  const balance = admin.command('balance').description('balances');
  balance
    .command('add')
    .description('add credit to a client, or to one of its celulares with --celular (negative amounts remove credit)')
    .requiredOption('--cliente <id>', 'client id', positiveInt)
    .option('--celular <id>', "celular id (default: the client's global balance)", positiveInt)
    .requiredOption('--monto <n>', 'amount (credits, not 0)', nonZero)
    .option('--motivo <text>', 'reason, kept with the change (up to 200 characters)', text(0, 200))
    .action((o: BalanceAddOptions, cmd: Command) => runBalanceAdd(o, ctxOf(cmd)));
  registerAdminMovements(balance, ctxOf);
}
