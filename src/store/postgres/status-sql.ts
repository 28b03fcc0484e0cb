import { MESSAGE_STATUS_FIELDS, type MessageStatusField } from '../../core/events/event-data.js';

/** The `message.status` data as SQL (json_build_object keeps the order of core's one list of fields). */
export function statusData(expr: (f: MessageStatusField) => string): string {
  return `json_build_object(${MESSAGE_STATUS_FIELDS.map((f) => `'${f}', ${expr(f)}`).join(', ')})::text`;
}

/** A field of the data from row `alias`, but the step's own (`step`). */
export const fieldOf = (alias: string, step: Partial<Record<MessageStatusField, string>>) => (f: MessageStatusField) => step[f] ?? `${alias}.${f}`;
