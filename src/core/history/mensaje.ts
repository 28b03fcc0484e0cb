import type { ClientPrincipal } from '../auth/auth.js';
import type { Core } from '../context.js';
import { AppError, fail } from '../api/errors.js';
import { mensajeView, type MensajeView } from './historial.js';
import type { MensajeRow } from '../ports/model.js';

/** The longest msg_id looked up: ids are UUIDs (36); anything longer is bad input, not a miss. */
const MSG_ID_MAX = 64;

/**
 * One message by its id, in the credential's scope (docs/design.md §10): a
 * client key reads any of its lines' messages, a celular key its own line's;
 * a sibling line's is 403, another client's or an unknown id 404, so an id
 * never tells a stranger that it exists. One primary-key read.
 */
export async function mensajeById(core: Pick<Core, 'store'>, p: ClientPrincipal, msgId: string): Promise<MensajeView> {
  return mensajeView(await mensajeRowById(core, p, msgId));
}

/** The stored row under the same rules (its story reads more of it). */
export async function mensajeRowById(core: Pick<Core, 'store'>, p: ClientPrincipal, msgId: string): Promise<MensajeRow> {
  const id = msgId.trim();
  if (id.length === 0 || id.length > MSG_ID_MAX) fail('INVALID_PARAMS', `msg_id: the id a send answered (1 to ${MSG_ID_MAX} characters) is required`);
  const m = await core.store.getMensaje(id);
  if (!m || m.cliente_id !== p.cliente.id) fail('MENSAJE_NOT_FOUND', `message ${id} not found`);
  if (p.kind === 'celular' && m.celular_id !== p.celular.id) {
    throw new AppError('FORBIDDEN', `this celular key may read only the messages of celular ${p.celular.id}`);
  }
  return m;
}
