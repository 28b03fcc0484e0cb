import { applySessionStatus } from './celulares.js';
import { invalidateCredentials } from '../auth/credential-invalidate.js';
import { iso } from '../time/clock.js';
import type { Core } from '../context.js';
import { AppError, fail } from '../api/errors.js';
import type { AccountsStore } from '../ports/accounts.js';
import type { GatewayServerLoad, GatewayServersStore } from '../ports/gateway-servers.js';
import type { GatewayServerEstado, GatewayServerRow } from '../ports/model.js';

/**
 * Many gateway servers (Evolution API or WAHA processes) behind one
 * deployment. A line belongs to one server, chosen when it first needs its
 * instance by the least-loaded rule; the operator can move it. Every server is
 * of the deployment's kind (`serve --gateway`). gateways/router.ts sends each
 * call to the adapter of the line's server; the rules are here.
 */

/** The `--gateway-url` server's name: the one-server shorthand. */
export const DEFAULT_SERVER = 'default';
export const SERVER_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$';
export const MAX_LINEAS = 1_000_000;

/**
 * The least-loaded rule: among `activo` servers of `kind` with room, the one
 * with the fewest lines for its `max_lineas`; ties go to the lowest id. A
 * server without a cap weighs like the largest cap among the candidates (with
 * no caps at all, the fewest lines wins). Null when no server can take a line.
 */
export function pickServer(servers: GatewayServerLoad[], kind: string): number | null {
  const open = servers.filter((s) => s.estado === 'activo' && s.tipo === kind && (s.max_lineas === null || s.lineas < s.max_lineas));
  if (open.length === 0) return null;
  const largest = Math.max(0, ...open.map((s) => s.max_lineas ?? 0));
  const cap = (s: GatewayServerLoad) => s.max_lineas ?? (largest || 1);
  let best = open[0]!;
  for (const s of open.slice(1)) {
    // a/ca < b/cb without fractions; ids ascend, so a tie keeps the earlier one.
    if (s.lineas * cap(best) < best.lineas * cap(s)) best = s;
  }
  return best.id;
}

/**
 * Which server a call on `instancia` goes to: its line's server, chosen now if
 * it has none. An instance no line holds (a probe, a stray event) goes to the
 * first active server. Null when the line has no server and none can take it.
 */
export async function serverOfInstance(store: AccountsStore & GatewayServersStore, kind: string, instancia: string, now: number): Promise<number | null> {
  const celular = await store.getCelularByInstancia(instancia);
  if (!celular) {
    const all = await store.listGatewayServers();
    return (all.find((s) => s.estado === 'activo') ?? all[0])?.id ?? null;
  }
  if (celular.servidor_id !== null) return celular.servidor_id;
  return store.assignGatewayServer(celular.id, (servers) => pickServer(servers, kind), now);
}

/**
 * At start: refuses servers of another kind (one kind per deployment), makes
 * or updates the `--gateway-url` server as `default`, and gives it every line
 * that has no server (lines made before there were several).
 */
export async function registerDefaultServer(
  store: GatewayServersStore,
  kind: string,
  url: string,
  key: string,
  now: number,
): Promise<{ servidor: GatewayServerRow; adoptadas: number }> {
  const other = (await store.listGatewayServers()).find((s) => s.tipo !== kind && s.nombre !== DEFAULT_SERVER);
  if (other) throw new Error(`gateway server "${other.nombre}" is ${other.tipo} but this server runs --gateway ${kind}: one kind per deployment`);
  const servidor = await store.putGatewayServer({ nombre: DEFAULT_SERVER, tipo: kind, url, key }, now);
  return { servidor, adoptadas: await store.adoptUnassignedLines(servidor.id, now) };
}

/** A server as the API shows it: never its key. */
export function gatewayServerView(s: GatewayServerRow, lineas: number) {
  return {
    id: s.id,
    nombre: s.nombre,
    tipo: s.tipo,
    url: s.url,
    estado: s.estado,
    max_lineas: s.max_lineas,
    lineas,
    tiene_key: s.key !== '',
    created_at: iso(s.created_at),
  };
}

/** The deployment's kind; the simulator has no servers. */
function serversKind(core: Pick<Core, 'gateway'>): string {
  if (core.gateway.simulated || !core.gateway.onServer) {
    fail('INVALID_PARAMS', `this server runs --gateway ${core.gateway.name}: gateway servers are for evolution or waha`);
  }
  return core.gateway.name;
}

async function serverNamed(core: Pick<Core, 'store'>, nombre: string): Promise<GatewayServerRow> {
  return (await core.store.getGatewayServerByNombre(nombre)) ?? fail('GATEWAY_SERVER_NOT_FOUND', `no gateway server named "${nombre}"`);
}

async function loadOf(core: Pick<Core, 'store'>, id: number): Promise<number> {
  return (await core.store.listGatewayServers()).find((s) => s.id === id)?.lineas ?? 0;
}

export async function listGatewayServers(core: Pick<Core, 'store' | 'gateway'>) {
  const servers = await core.store.listGatewayServers();
  return { tipo: core.gateway.name, total: servers.length, servidores: servers.map((s) => gatewayServerView(s, s.lineas)) };
}

/** The lines a server holds, in id order, at most `limit` (with one more read to say whether there are others). */
export async function serverLines(core: Pick<Core, 'store'>, servidorId: number, limit: number) {
  const rows = await core.store.celularesOnServer(servidorId, limit + 1);
  return {
    celulares: rows
      .slice(0, limit)
      .map((c) => ({ id: c.id, cliente_id: c.cliente_id, numero: c.numero, nombre_interno: c.nombre_interno, estado: c.estado, last_status: c.last_status })),
    mas: rows.length > limit,
  };
}

/** An http(s) URL without credentials in it (the key has its own field, kept secret). */
function checkUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    fail('INVALID_PARAMS', `url: "${raw.slice(0, 200)}" is not a URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') fail('INVALID_PARAMS', `url: must be http or https, not ${u.protocol.replace(':', '')}`);
  if (u.username || u.password) fail('INVALID_PARAMS', 'url: may not carry credentials; give the API key in key');
  if (u.search || u.hash) fail('INVALID_PARAMS', "url: the base URL of the gateway's API, without a query or fragment");
  return raw.replace(/\/+$/, '');
}

export interface NewServerInput {
  nombre: string;
  url: string;
  key: string;
  tipo?: string;
  max_lineas?: number | null;
}

export async function addGatewayServer(core: Pick<Core, 'store' | 'gateway' | 'clock'>, input: NewServerInput) {
  const kind = serversKind(core);
  if (!new RegExp(SERVER_NAME_PATTERN).test(input.nombre))
    fail('INVALID_PARAMS', 'nombre: 1 to 64 letters, digits, dots, dashes or underscores, starting with a letter or digit');
  if (input.tipo !== undefined && input.tipo !== kind) {
    fail('INVALID_PARAMS', `tipo: this deployment runs ${kind} servers only (serve --gateway ${kind}); a ${input.tipo} server needs a deployment of its own`);
  }
  const url = checkUrl(input.url);
  if (!/^\S{1,500}$/.test(input.key)) fail('INVALID_PARAMS', 'key: 1 to 500 characters without spaces');
  const max = input.max_lineas ?? null;
  if (max !== null && (!Number.isInteger(max) || max < 1 || max > MAX_LINEAS))
    fail('INVALID_PARAMS', `max_lineas: an integer from 1 to ${MAX_LINEAS}, or null`);
  const now = core.clock.now();
  const r = await core.store.addGatewayServer({ nombre: input.nombre, tipo: kind, url, key: input.key, max_lineas: max }, now);
  if (!r.ok) fail('CONFLICT', `a gateway server named "${input.nombre}" already exists`);
  await core.store.audit(
    {
      actor: 'operator',
      accion: 'gateway.agregar',
      objeto_tipo: 'gateway',
      objeto_id: r.servidor.id,
      cliente_id: null,
      detalle: { nombre: input.nombre, tipo: kind, url, max_lineas: max },
    },
    now,
  );
  return gatewayServerView(r.servidor, 0);
}

/** `drenando`: the server keeps its lines and takes no new ones; `activo` again takes them. */
export async function setGatewayServerEstado(core: Pick<Core, 'store' | 'clock'>, nombre: string, estado: GatewayServerEstado) {
  const s = await serverNamed(core, nombre);
  const now = core.clock.now();
  const row = (await core.store.setGatewayServerEstado(s.id, estado, now)) ?? s;
  if (s.estado !== estado) {
    await core.store.audit(
      {
        actor: 'operator',
        accion: `gateway.${estado === 'drenando' ? 'drenar' : 'activar'}`,
        objeto_tipo: 'gateway',
        objeto_id: s.id,
        cliente_id: null,
        detalle: { nombre },
      },
      now,
    );
  }
  return gatewayServerView(row, await loadOf(core, s.id));
}

/**
 * Moves a line to another server: its session is logged out and its instance
 * deleted on the old one (best effort: a dead server is a reason to move), the
 * line is given to the new one and is `logged_out` there until linked again.
 */
export async function moveCelular(core: Pick<Core, 'store' | 'gateway' | 'clock' | 'bus' | 'signals'>, celularId: number, nombre: string) {
  serversKind(core);
  const celular = (await core.store.getCelular(celularId)) ?? fail('CELULAR_NOT_FOUND', `celular ${celularId} not found`);
  const to = await serverNamed(core, nombre);
  if (to.id === celular.servidor_id) fail('CONFLICT', `celular ${celularId} is already on gateway server "${nombre}"`);
  if (to.estado !== 'activo') fail('CONFLICT', `gateway server "${nombre}" is draining: it takes no new lines (activate it first)`);
  const from = celular.servidor_id === null ? null : await core.store.getGatewayServer(celular.servidor_id);
  let aviso: string | undefined;
  if (from && celular.gateway_instancia) {
    try {
      const gw = await core.gateway.onServer!(from.id);
      await gw.logout(celular.gateway_instancia);
      await gw.deleteInstance(celular.gateway_instancia);
    } catch (err) {
      if (err instanceof AppError) throw err;
      aviso = `the instance could not be removed from "${from.nombre}" (${err instanceof Error ? err.message : String(err)}); remove it there by hand if that server comes back`;
    }
  }
  const now = core.clock.now();
  await core.store.updateCelular(celularId, { servidor_id: to.id }, now);
  await invalidateCredentials(core, { celular: celularId });
  const row = (await applySessionStatus(core, celularId, 'logged_out')) ?? celular;
  await core.store.audit(
    {
      actor: 'operator',
      accion: 'celular.mover_gateway',
      objeto_tipo: 'celular',
      objeto_id: celularId,
      cliente_id: celular.cliente_id,
      detalle: { desde: from?.nombre ?? null, hacia: nombre },
    },
    now,
  );
  return {
    celular_id: celularId,
    servidor: nombre,
    servidor_anterior: from?.nombre ?? null,
    gateway_instancia: celular.gateway_instancia ?? '',
    estado: row.estado,
    status: 'logged_out' as const,
    instancia_anterior_eliminada: from !== null && celular.gateway_instancia !== null && aviso === undefined,
    vincular: 'the line must be linked again on its new server: ask for its QR or pairing code',
    ...(aviso ? { aviso } : {}),
  };
}
