import { Command, InvalidArgumentError, Option } from 'commander';
import { createWriteStream, existsSync } from 'node:fs';
import { link, open, rename, unlink } from 'node:fs/promises';
import { resolve } from 'node:path';
import { confirmOrYes } from '../confirm.js';
import type { Ctx } from '../context.js';
import type { FieldFlags } from '../field-errors.js';
import { CliError, EXIT, usage } from '../exit-codes.js';
import type { CtxOf } from '../main.js';
import { readStdin } from '../io.js';
import { emit, printFields, printSecret, printTable, type Cell } from '../output.js';
import { checkArg, email, httpUrl, idArg, int, intOrNone, positiveInt, serverName, text, token } from '../parse.js';

interface ClienteSummary {
  cliente: {
    id: number;
    nombre: string;
    email: string;
    estado: string;
    plan: string;
    max_celulares: number | null;
    consumo_mes_actual: number;
    created_at: string;
  };
  saldo_global: number;
  num_celulares: number;
  num_celulares_activos: number;
  mensajes_30d: number;
}

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

interface GatewayServer {
  id: number;
  nombre: string;
  tipo: string;
  url: string;
  estado: string;
  max_lineas: number | null;
  lineas: number;
  tiene_key: boolean;
  created_at: string;
}

function gatewayFields(g: GatewayServer): Array<[string, Cell]> {
  return [
    ['nombre', g.nombre],
    ['tipo', g.tipo],
    ['url', g.url],
    ['estado', g.estado],
    ['lineas', g.lineas],
    ['max_lineas', g.max_lineas ?? 'unlimited'],
    ['key', g.tiene_key ? 'set (never shown)' : 'none'],
  ];
}

/** Operator credential options, on the `admin` and `sim` groups. */
export function withOperatorOptions(cmd: Command): Command {
  return cmd
    .addOption(
      new Option(
        '--admin-token <token>',
        'operator token (env PASARELA_ADMIN_TOKEN; else the profile; else <data-dir>/admin-token, of the default data directory only for a server on this machine)',
      ),
    )
    .addOption(new Option('--data-dir <dir>', 'data directory of a `serve` on this machine, to read its admin-token file (read for any --url)'));
}

/**
 * A call with the operator token. A refusal (401) says where the token came
 * from: a stale admin-token file of another server is the usual cause.
 */
export async function operatorCall<T>(
  ctx: Ctx,
  method: 'GET' | 'POST' | 'PATCH',
  path: string,
  json?: Record<string, unknown>,
  query?: Record<string, string | number | undefined>,
  fields?: FieldFlags,
): Promise<T> {
  const cred = ctx.adminCredential();
  try {
    return await ctx.client().call<T>(method, path, { key: cred.token, json, query, fields });
  } catch (err) {
    if (err instanceof CliError && err.exitCode === EXIT.AUTH) throw new CliError(`${err.message} (${cred.from})`, EXIT.AUTH, err.body);
    throw err;
  }
}

/** --monto: an amount of credits; 0 would change nothing and the server refuses it. */
function nonZero(value: string): number {
  const n = int(-1_000_000_000, 1_000_000_000)(value);
  if (n === 0) throw new InvalidArgumentError('must not be 0 (negative amounts remove credit)');
  return n;
}

/** A legacy token: 16 to 128 printable ASCII characters, not shaped like a WA_/WAC_ key. */
function legacyToken(value: string): string {
  token(16, 128)(value);
  if (/^(WAC|WA)_[1-9][0-9]{0,15}_[A-Za-z0-9_-]{16,128}$/.test(value)) throw new InvalidArgumentError('may not have the form of a WA_ or WAC_ key');
  return value;
}

/** --gateway-url: the base URL of a gateway's API, without credentials, query or fragment. */
function gatewayUrl(value: string): string {
  const v = httpUrl(2000)(value);
  const u = new URL(v);
  if (u.username || u.password) throw new InvalidArgumentError('may not carry credentials; give the API key with --gateway-key');
  if (u.search || u.hash) throw new InvalidArgumentError('the base URL of the API, without a query or fragment');
  return v;
}

/** API fields of the operator's requests and the flag or argument that sets each, to explain a 400. */
const ADMIN_FIELDS = {
  nombre: '--nombre',
  email: '--email',
  plan: '--plan',
  estado: '--estado',
  max_celulares: '--max-celulares',
  saldo: '--saldo',
  cliente_id: '--cliente',
  celular_id: '--celular',
  monto: '--monto',
  motivo: '--motivo',
  token: '[token]',
  url: '--gateway-url',
  key: '--gateway-key',
  max_lineas: '--max-lineas',
  servidor: '<gateway>',
  limit: '--limit',
} as const;

const call = <T>(
  ctx: Ctx,
  method: 'GET' | 'POST' | 'PATCH',
  path: string,
  json?: Record<string, unknown>,
  query?: Record<string, string | number | undefined>,
) => operatorCall<T>(ctx, method, path, json, query, ADMIN_FIELDS);

/** `pasarela admin ...`: the operator's commands (operator token). */
export function registerAdmin(program: Command, ctxOf: CtxOf): void {
  const admin = withOperatorOptions(program.command('admin').description('operator commands: clients, plans, balances, tokens, gateway servers, backups'));

  const client = admin.command('client').description('client accounts');
  client
    .command('create')
    .description('create a client; prints its key (WAC_...) once')
    .requiredOption('--nombre <nombre>', 'name (up to 200 characters)', text(1, 200))
    .requiredOption('--email <email>', 'contact email', email)
    .addOption(new Option('--plan <plan>', 'plan').choices(['medido', 'ilimitado']).default('medido'))
    .option('--max-celulares <n>', 'cap on celulares (default: none)', int(0, 100000))
    .option('--saldo <n>', 'initial global balance', int(0, 1_000_000_000))
    .action(async (o: { nombre: string; email: string; plan: string; maxCelulares?: number; saldo?: number }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const b = await call<ClienteSummary & { api_key: string }>(ctx, 'POST', '/admin/clientes', {
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
    });

  client
    .command('list')
    .description('every client')
    .action(async (_o, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const b = await call<{ clientes: ClienteSummary[] }>(ctx, 'GET', '/admin/clientes');
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
    });

  client
    .command('show <id>')
    .description('one client and its celulares')
    .action(async (id: string, _o, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const b = await call<
        ClienteSummary & { celulares: Array<{ id: number; numero: string; estado: string; saldo_actual: number; last_status: string | null }> }
      >(ctx, 'GET', `/admin/clientes/${idArg(id)}`);
      emit(ctx, b, () => {
        printFields(ctx.term, summaryFields(b));
        if (b.celulares.length > 0) {
          ctx.term.out('');
          printTable(
            ctx.term,
            ['celular', 'numero', 'estado', 'saldo', 'sesion'],
            b.celulares.map((c) => [c.id, c.numero, c.estado, c.saldo_actual, c.last_status]),
          );
        }
      });
    });

  client
    .command('edit <id>')
    .description('change name, email, plan, state or cap')
    .option('--nombre <nombre>', 'name (up to 200 characters)', text(1, 200))
    .option('--email <email>', 'contact email', email)
    .addOption(new Option('--plan <plan>', 'plan').choices(['medido', 'ilimitado']))
    .addOption(new Option('--estado <estado>', 'state').choices(['activo', 'suspendido', 'baja']))
    .option('--max-celulares <n>', 'cap on celulares, or none', intOrNone(0, 100000))
    .action(async (id: string, o: { nombre?: string; email?: string; plan?: string; estado?: string; maxCelulares?: number | null }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const body: Record<string, unknown> = {};
      if (o.nombre !== undefined) body.nombre = o.nombre;
      if (o.email !== undefined) body.email = o.email;
      if (o.plan !== undefined) body.plan = o.plan;
      if (o.estado !== undefined) body.estado = o.estado;
      if (o.maxCelulares !== undefined) body.max_celulares = o.maxCelulares;
      if (Object.keys(body).length === 0) throw usage('nothing to change: give at least one of --nombre, --email, --plan, --estado, --max-celulares');
      const b = await call<ClienteSummary>(ctx, 'PATCH', `/admin/clientes/${idArg(id)}`, body);
      emit(ctx, b, () => printFields(ctx.term, summaryFields(b)));
    });

  client
    .command('rotate-key <id>')
    .description('issue a new client key; the old one stops working at once (asks first on a TTY)')
    .option('-y, --yes', 'do not ask for confirmation')
    .action(async (id: string, o: { yes?: boolean }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const n = idArg(id);
      const sure = await confirmOrYes(ctx, o.yes, async () => {
        // Named in the question (and a wrong id is exit 4 before it).
        const c = (await call<ClienteSummary>(ctx, 'GET', `/admin/clientes/${n}`)).cliente;
        return `Rotate the key of client ${c.id} “${c.nombre}” (${c.email})? Its current key stops working at once, for every script that uses it.`;
      });
      if (!sure) return;
      const b = await call<{ cliente_id: number; api_key: string }>(ctx, 'POST', `/admin/clientes/${n}/rotar-key`);
      emit(ctx, b, () => printSecret(ctx.term, 'Client key', b.api_key));
    });

  admin
    .command('balance')
    .description('balances')
    .command('add')
    .description('add credit to a client, or to one of its celulares with --celular (negative amounts remove credit)')
    .requiredOption('--cliente <id>', 'client id', positiveInt)
    .option('--celular <id>', "celular id (default: the client's global balance)", positiveInt)
    .requiredOption('--monto <n>', 'amount (credits, not 0)', nonZero)
    .option('--motivo <text>', 'reason, kept with the change (up to 200 characters)', text(0, 200))
    .action(async (o: { cliente: number; celular?: number; monto: number; motivo?: string }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const b = await call<{ cliente_id: number; celular_id: number | null; saldo_global: number; saldo_celular: number | null; movimiento_id: number }>(
        ctx,
        'POST',
        '/admin/saldo',
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
    });

  const celular = admin.command('celular').description('operator actions on celulares');
  celular
    .command('legacy-token <celular_id> [token]')
    .description('set the legacy token of a celular, or make and print one')
    .action(async (id: string, given: string | undefined, _o, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const n = idArg(id);
      if (given !== undefined) checkArg('token', given, legacyToken);
      const b = await call<{ celular_id: number; token_legacy: string; generado: boolean }>(
        ctx,
        'POST',
        `/admin/celulares/${n}/token-legacy`,
        given ? { token: given } : {},
      );
      emit(ctx, b, () => {
        if (b.generado) printSecret(ctx.term, 'Legacy token', b.token_legacy);
        else ctx.term.err(`Legacy token of celular ${b.celular_id} set.`);
      });
    });
  celular
    .command('rotate-key <celular_id>')
    .description('issue a new celular key; the old one stops working at once (asks first on a TTY)')
    .option('-y, --yes', 'do not ask for confirmation')
    .action(async (id: string, o: { yes?: boolean }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const n = idArg(id, 'celular_id');
      if (!(await confirmOrYes(ctx, o.yes, () => `Rotate the key of celular ${n}? Its current key stops working at once, for every script that uses it.`)))
        return;
      const b = await call<{ celular_id: number; api_key: string }>(ctx, 'POST', `/admin/celulares/${n}/rotar-key`);
      emit(ctx, b, () => printSecret(ctx.term, 'Celular key', b.api_key));
    });

  const gateway = admin.command('gateway').description('gateway servers (Evolution or WAHA) lines are spread over');
  gateway
    .command('list')
    .description('every gateway server with its lines and state (keys are never shown)')
    .action(async (_o, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const b = await call<{ tipo: string; servidores: GatewayServer[] }>(ctx, 'GET', '/admin/gateways');
      emit(ctx, b, () =>
        printTable(
          ctx.term,
          ['nombre', 'tipo', 'url', 'estado', 'lineas', 'max_lineas'],
          b.servidores.map((g) => [g.nombre, g.tipo, g.url, g.estado, g.lineas, g.max_lineas ?? 'unlimited']),
        ),
      );
    });
  gateway
    .command('add <nombre>')
    .description("add a server of this deployment's kind; new lines go to the least-loaded active server")
    .requiredOption('--gateway-url <url>', "base URL of the server's API (http or https, no query)", gatewayUrl)
    .requiredOption('--gateway-key <key>', "the server's global API key; - reads it from stdin (flags show in ps)")
    .option('--max-lineas <n>', 'lines it should hold at most (default: no cap)', int(1, 1_000_000))
    .action(async (nombre: string, o: { gatewayUrl: string; gatewayKey: string; maxLineas?: number }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      checkArg('nombre', nombre, serverName);
      const key = o.gatewayKey === '-' ? await readStdin(ctx.term.io.stdin) : o.gatewayKey;
      if (!key) throw usage('--gateway-key -: nothing on stdin');
      if (!/^\S{1,500}$/.test(key)) throw usage('--gateway-key: 1 to 500 characters without spaces');
      const b = await call<GatewayServer>(ctx, 'POST', '/admin/gateways', {
        nombre,
        url: o.gatewayUrl,
        key,
        ...(o.maxLineas !== undefined ? { max_lineas: o.maxLineas } : {}),
      });
      emit(ctx, b, () => printFields(ctx.term, gatewayFields(b)));
    });
  for (const [name, path, what] of [
    ['drain', 'drain', 'stop giving a server new lines; it keeps the ones it has'],
    ['undrain', 'undrain', 'let a drained server take new lines again'],
  ] as const) {
    gateway
      .command(`${name} <nombre>`)
      .description(what)
      .action(async (nombre: string, _o, cmd: Command) => {
        const ctx = ctxOf(cmd);
        checkArg('nombre', nombre, serverName);
        const b = await call<GatewayServer>(ctx, 'POST', `/admin/gateways/${encodeURIComponent(nombre)}/${path}`);
        emit(ctx, b, () => printFields(ctx.term, gatewayFields(b)));
      });
  }
  celular
    .command('move <celular_id> <gateway>')
    .description('move a celular to another gateway server; it is logged out there and must be linked again')
    .action(async (id: string, nombre: string, _o, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const n = idArg(id);
      checkArg('gateway', nombre, serverName);
      const b = await call<{
        celular_id: number;
        servidor: string;
        servidor_anterior: string | null;
        estado: string;
        instancia_anterior_eliminada: boolean;
        vincular: string;
        aviso?: string;
      }>(ctx, 'POST', `/admin/celulares/${n}/servidor`, { servidor: nombre });
      emit(ctx, b, () => {
        printFields(ctx.term, [
          ['celular', b.celular_id],
          ['servidor', b.servidor],
          ['servidor_anterior', b.servidor_anterior],
          ['estado', b.estado],
          ['instancia_anterior_eliminada', b.instancia_anterior_eliminada],
        ]);
        if (b.aviso) ctx.term.err(`warning: ${b.aviso}`);
        ctx.term.err(`Link it again: pasarela celular qr ${b.celular_id}`);
      });
    });

  admin
    .command('audit')
    .description('recent audit records, newest first')
    .option('--cliente <id>', 'only this client', positiveInt)
    .option('--limit <n>', 'how many', int(1, 1000), 50)
    .action(async (o: { cliente?: number; limit: number }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const b = await call<{
        registros: Array<{ id: number; fecha: string; actor: string; accion: string; objeto_tipo: string; objeto_id: number | null; detalle: unknown }>;
      }>(ctx, 'GET', '/admin/auditoria', undefined, { cliente_id: o.cliente, limit: o.limit });
      emit(ctx, b, () =>
        printTable(
          ctx.term,
          ['id', 'fecha', 'actor', 'accion', 'objeto', 'detalle'],
          b.registros.map((r) => [r.id, r.fecha, r.actor, r.accion, `${r.objeto_tipo} ${r.objeto_id ?? ''}`, JSON.stringify(r.detalle)]),
        ),
      );
    });

  admin
    .command('backup <file>')
    .description('a consistent copy of the SQLite store, taken while the server serves; see README "Backups and restore"')
    .option('--force', 'replace FILE if it exists')
    .action(async (file: string, o: { force?: boolean }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const dest = resolve(file);
      if (!o.force && existsSync(dest)) throw usage(`${file} exists; give --force to replace it`);
      const partial = `${dest}.partial`;
      const cred = ctx.adminCredential();
      const sink = createWriteStream(partial, { mode: 0o600 });
      let got;
      try {
        got = await ctx.client().download('POST', '/admin/backup', sink, { key: cred.token, timeoutMs: 10 * 60_000 });
      } catch (err) {
        sink.destroy();
        await unlink(partial).catch(() => {});
        if (err instanceof CliError) {
          if (err.exitCode === EXIT.AUTH) throw new CliError(`${err.message} (${cred.from})`, EXIT.AUTH, err.body);
          throw err;
        }
        throw new CliError(`cannot write ${partial}: ${(err as Error).message}`, EXIT.ERROR);
      }
      const want = String(got.headers['x-pasarela-sha256'] ?? '');
      const length = Number(got.headers['content-length'] ?? NaN);
      if (want !== got.sha256 || (Number.isFinite(length) && length !== got.bytes)) {
        await unlink(partial).catch(() => {});
        throw new CliError(
          `the backup arrived damaged (${got.bytes} bytes, SHA-256 ${got.sha256}; the server sent ${want || 'no SHA-256'}); nothing was written`,
          EXIT.SERVER,
        );
      }
      // On disk before it takes the name.
      const fh = await open(partial, 'r+');
      await fh.sync();
      await fh.close();
      if (o.force) await rename(partial, dest);
      else {
        // A hard link fails if FILE appeared meanwhile: never replaced without --force.
        try {
          await link(partial, dest);
        } catch (err) {
          await unlink(partial).catch(() => {});
          if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw usage(`${file} exists; give --force to replace it`);
          throw err;
        }
        await unlink(partial);
      }
      const schema = Number(got.headers['x-pasarela-schema'] ?? NaN);
      const b = { ok: true, file: dest, bytes: got.bytes, sha256: got.sha256, schema_version: Number.isFinite(schema) ? schema : null };
      emit(ctx, b, () =>
        printFields(ctx.term, [
          ['file', b.file],
          ['bytes', b.bytes],
          ['sha256', b.sha256],
          ['schema_version', b.schema_version],
        ]),
      );
    });
}
