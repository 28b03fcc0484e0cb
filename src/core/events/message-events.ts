import type { Core } from '../context.js';
import { messageStatusData } from './event-data.js';
import type { MensajeEstadoRow } from '../ports/model.js';

/** Publishes `message.status` (docs/design.md §6) on the in-process bus for one change of a message's estado; the bus adds modo (for metrics). */
export function publishMessageStatus(core: Pick<Core, 'clock' | 'bus'>, after: MensajeEstadoRow, estadoAnterior: string | null): void {
  core.bus.publish('message.status', { ...messageStatusData(after, estadoAnterior, core.clock.now()), modo: after.modo });
}
