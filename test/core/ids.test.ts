import { expect, it } from 'vitest';
import { newMsgId } from '../../src/core/sending/ids.js';

it('msg_ids are RFC 9562 version-7 UUIDs: unique, and later ones sort later', () => {
  const ids = Array.from({ length: 2000 }, (_, i) => newMsgId(1_800_000_000_000 + Math.floor(i / 10)));
  for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  expect(new Set(ids).size).toBe(ids.length);
  // The first 48 bits are the millisecond: ids of a later millisecond sort after every earlier one.
  for (let i = 10; i < ids.length; i += 10) expect(ids[i - 1]!.slice(0, 13) < ids[i]!.slice(0, 13)).toBe(true);
  expect(newMsgId(0x0123456789ab).startsWith('01234567-89ab-7')).toBe(true);
});
