// Small helpers over Baileys' binary nodes, and the key-bundle encoding the encrypt IQ uses.
import type { BinaryNode } from 'baileys';
import type { Bundle } from './signal-party.js';

export const child = (node: BinaryNode | undefined, tag: string): BinaryNode | undefined =>
  Array.isArray(node?.content) ? node.content.find((c) => c.tag === tag) : undefined;
export const children = (node: BinaryNode | undefined, tag?: string): BinaryNode[] =>
  Array.isArray(node?.content) ? node.content.filter((c) => tag === undefined || c.tag === tag) : [];
export const bytes = (node: BinaryNode | undefined): Buffer | undefined =>
  node?.content instanceof Uint8Array ? Buffer.from(node.content) : typeof node?.content === 'string' ? Buffer.from(node.content) : undefined;
export const n = (tag: string, attrs: Record<string, string> = {}, content?: BinaryNode[] | Uint8Array | string): BinaryNode =>
  content === undefined ? { tag, attrs } : { tag, attrs, content };

export const bigEndian = (value: number, size: number): Buffer => {
  const b = Buffer.alloc(size);
  for (let i = size - 1, v = value; i >= 0; i--, v = Math.floor(v / 256)) b[i] = v & 0xff;
  return b;
};
export const readBigEndian = (b: Buffer | undefined): number => (b ? [...b].reduce((acc, x) => acc * 256 + x, 0) : 0);

export function bundleNode(jid: string, b: Bundle): BinaryNode {
  const content = [
    n('registration', {}, bigEndian(b.registrationId, 4)),
    n('type', {}, Buffer.from([5])),
    n('identity', {}, b.identity),
    n('skey', {}, [n('id', {}, bigEndian(b.signedPreKey.id, 3)), n('value', {}, b.signedPreKey.pub), n('signature', {}, b.signedPreKey.signature)]),
  ];
  if (b.preKey) content.push(n('key', {}, [n('id', {}, bigEndian(b.preKey.id, 3)), n('value', {}, b.preKey.pub)]));
  return n('user', { jid }, content);
}
