import { api, type ApiResponse, type TestServer } from '../helpers/server.js';
import { admin, link, numeroNuevo, type Line } from './send-helpers.js';

/** A client's pool of lines for the pool suites (grupos*.test.ts): lines added to one client, the pool over them. */

/** Another line of `line`'s client, linked unless told. */
export async function siblingLine(s: TestServer, line: Line, opts: { link?: boolean } = {}): Promise<Line> {
  const cel = await api(s.url, 'POST', '/api/celular_crear.php', { key: line.clientKey, json: { numero: numeroNuevo() } });
  if (cel.status !== 201) throw new Error(`celular: ${cel.status} ${cel.text}`);
  const sib: Line = {
    ...line,
    celularId: cel.body.celular_id,
    celularKey: cel.body.api_key,
    gatewayToken: cel.body.gateway_token,
    numero: cel.body.celular.numero,
  };
  if (opts.link !== false) await link(s, sib);
  return sib;
}

export async function crearGrupo(s: TestServer, line: Line, body: Record<string, unknown>): Promise<ApiResponse> {
  return api(s.url, 'POST', '/api/grupo_crear.php', { key: line.clientKey, json: body });
}

/** Sends a text through pool `grupo` with the client key. */
export function sendPool(s: TestServer, line: Line, grupo: string, destinatario: string, mensaje: string, extra: Record<string, unknown> = {}) {
  return api(s.url, 'POST', '/api/mensaje_enviar_texto.php', { key: line.clientKey, json: { grupo, destinatario, mensaje, ...extra } });
}

/** The phone removes the linked device: the line ends disconnected without a session. */
export async function phoneLogout(s: TestServer, line: Line): Promise<void> {
  const r = await admin(s, 'POST', '/admin/sim/logout', { celular_id: line.celularId });
  if (r.status !== 200) throw new Error(`sim logout: ${r.status} ${r.text}`);
}

export async function lineOf(s: TestServer, msgId: string): Promise<number | undefined> {
  return (await s.core.store.getMensaje(msgId))?.celular_id;
}
