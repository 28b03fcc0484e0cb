/**
 * WAHA message ids. pasarela keeps the BARE WhatsApp id (`3EB0...`) as
 * gatewayMsgId: send answers differ by engine (NOWEB `{key:{id}}` is bare,
 * WEBJS `{id:{_serialized}}` is `true_<chat>_<id>`), while acks and inbound
 * webhooks carry the serialized form (contract 5.1, 5.4). Reducing every form
 * to the bare id makes a send's id and its acks match whatever the engine.
 */

/** The bare id of a serialized `{fromMe}_{chatId}_{waId}[_{participant}]`; any other string as is. */
export function bareId(id: string): string {
  const m = /^(?:true|false)_[^_]+_([^_]+)/.exec(id);
  if (m) return m[1]!;
  return id.split('_').pop() ?? id;
}

/** The message id of a send's answer, bare; undefined when the answer carries none we know. */
export function sentMessageId(body: unknown): string | undefined {
  if (typeof body === 'string' && body.trim() !== '') return bareId(body.trim());
  if (body === null || typeof body !== 'object') return undefined;
  const b = body as { key?: { id?: unknown }; id?: unknown };
  const pick = (v: unknown) => (typeof v === 'string' && v !== '' ? bareId(v) : undefined);
  if (b.key && typeof b.key === 'object') return pick(b.key.id);
  if (b.id && typeof b.id === 'object') {
    const id = b.id as { id?: unknown; _serialized?: unknown };
    return pick(id.id) ?? pick(id._serialized);
  }
  return pick(b.id);
}
