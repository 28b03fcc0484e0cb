import { randomBytes } from 'node:crypto';

/**
 * A message id: a UUID of version 7 (RFC 9562), a millisecond timestamp
 * followed by 74 random bits. Ids made later sort later, so each new message
 * lands at the end of the primary-key index instead of on a random page of
 * it: with millions of messages that is one hot page per insert, not one
 * cold page each. The timestamp is the wall clock on purpose: it only buys
 * locality, nothing reads it back.
 */
/** Random bytes drawn 4 KB at a time: one call to the system's generator per 256 ids, not one each. */
let pool = Buffer.alloc(0);
let used = 0;

function random16(): Buffer {
  if (used + 16 > pool.length) {
    pool = randomBytes(4096);
    used = 0;
  }
  used += 16;
  return Buffer.from(pool.subarray(used - 16, used));
}

export function newMsgId(now = Date.now()): string {
  const b = random16();
  b.writeUIntBE(now, 0, 6);
  b[6] = (b[6]! & 0x0f) | 0x70;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
