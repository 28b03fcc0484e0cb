import type { gatewayServerView } from '../../core/accounts/gateway-servers.js';
import { InvalidArgumentError, type Command } from 'commander';
import { API, pathTo } from '../../core/api/api-routes.js';
import type { Ctx } from '../context.js';
import { usage } from '../exit-codes.js';
import { readStdin } from '../io.js';
import type { CtxOf } from '../main.js';
import { adminCall as call } from '../operator.js';
import { emit, printFields, printTable, type Cell } from '../output.js';
import { checkArg, httpUrl, int, serverName } from '../parse.js';

/** A gateway server as the operator's API shows it (its key never). */
type GatewayServer = ReturnType<typeof gatewayServerView>;

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

/** --gateway-url: the base URL of a gateway's API, without credentials, query or fragment. */
function gatewayUrl(value: string): string {
  const v = httpUrl(2000)(value);
  const u = new URL(v);
  if (u.username || u.password) throw new InvalidArgumentError('may not carry credentials; give the API key with --gateway-key');
  if (u.search || u.hash) throw new InvalidArgumentError('the base URL of the API, without a query or fragment');
  return v;
}

export async function runGatewayList(ctx: Ctx): Promise<void> {
  const b = await call<{ tipo: string; servidores: GatewayServer[] }>(ctx, 'GET', API.adminGateways);
  emit(ctx, b, () =>
    printTable(
      ctx.term,
      ['nombre', 'tipo', 'url', 'estado', 'lineas', 'max_lineas'],
      b.servidores.map((g) => [g.nombre, g.tipo, g.url, g.estado, g.lineas, g.max_lineas ?? 'unlimited']),
    ),
  );
}

export interface GatewayAddOptions {
  nombre: string;
  gatewayUrl: string;
  /** The key, or `-`: read it from stdin. */
  gatewayKey: string;
  maxLineas?: number;
}

export async function runGatewayAdd(o: GatewayAddOptions, ctx: Ctx): Promise<void> {
  checkArg('nombre', o.nombre, serverName);
  const key = o.gatewayKey === '-' ? await readStdin(ctx.term.io.stdin) : o.gatewayKey;
  if (!key) throw usage('--gateway-key -: nothing on stdin');
  if (!/^\S{1,500}$/.test(key)) throw usage('--gateway-key: 1 to 500 characters without spaces');
  const b = await call<GatewayServer>(ctx, 'POST', API.adminGateways, {
    nombre: o.nombre,
    url: o.gatewayUrl,
    key,
    ...(o.maxLineas !== undefined ? { max_lineas: o.maxLineas } : {}),
  });
  emit(ctx, b, () => printFields(ctx.term, gatewayFields(b)));
}

export interface GatewayDrainOptions {
  nombre: string;
  /** drain: no new lines; undrain: new lines again. */
  action: 'drain' | 'undrain';
}

export async function runGatewayDrain(o: GatewayDrainOptions, ctx: Ctx): Promise<void> {
  checkArg('nombre', o.nombre, serverName);
  const path = o.action === 'drain' ? API.adminGatewayDrain : API.adminGatewayUndrain;
  const b = await call<GatewayServer>(ctx, 'POST', pathTo(path, { nombre: o.nombre }));
  emit(ctx, b, () => printFields(ctx.term, gatewayFields(b)));
}

/** `admin gateway ...`: the gateway servers lines are spread over. */
export function registerAdminGateways(admin: Command, ctxOf: CtxOf): void {
  const gateway = admin.command('gateway').description('gateway servers (Evolution or WAHA) lines are spread over');
  gateway
    .command('list')
    .description('every gateway server with its lines and state (keys are never shown)')
    .action((_o, cmd: Command) => runGatewayList(ctxOf(cmd)));
  gateway
    .command('add <nombre>')
    .description("add a server of this deployment's kind; new lines go to the least-loaded active server")
    .requiredOption('--gateway-url <url>', "base URL of the server's API (http or https, no query)", gatewayUrl)
    .requiredOption('--gateway-key <key>', "the server's global API key; - reads it from stdin (flags show in ps)")
    .option('--max-lineas <n>', 'lines it should hold at most (default: no cap)', int(1, 1_000_000))
    .action((nombre: string, o: Omit<GatewayAddOptions, 'nombre'>, cmd: Command) => runGatewayAdd({ nombre, ...o }, ctxOf(cmd)));
  for (const [action, what] of [
    ['drain', 'stop giving a server new lines; it keeps the ones it has'],
    ['undrain', 'let a drained server take new lines again'],
  ] as const) {
    gateway
      .command(`${action} <nombre>`)
      .description(what)
      .action((nombre: string, _o, cmd: Command) => runGatewayDrain({ nombre, action }, ctxOf(cmd)));
  }
}
