import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { proto } from 'baileys';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeNetwork, type FakeNetwork } from './index.js';
import { startLine, until, type LineClient } from './line-client.js';

const LINE = '5215550001111';
const CONTACT = '5215559998888';
const DELIVERY_ACK: number = proto.WebMessageInfo.Status.DELIVERY_ACK;
const READ: number = proto.WebMessageInfo.Status.READ;

describe('fakewa: real Baileys against the fake network', () => {
  let fake: FakeNetwork;
  let dir: string;
  let line: LineClient;

  beforeAll(async () => {
    fake = await startFakeNetwork({ log: process.env.FAKEWA_LOG ? (l) => console.log(l) : undefined });
    await fake.trustInProcess();
    dir = mkdtempSync(join(tmpdir(), 'fakewa-test-'));
  });
  afterAll(async () => {
    await line?.stop();
    await fake?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('registers by QR: pair-success, 515 restart, login with a LID, open', async () => {
    line = await startLine(fake, join(dir, 'line'), { onQr: (qr) => void fake.scanQr(qr, LINE) });
    await line.waitOpen();
    expect(line.closes).toContain(515);
    expect(line.events.some((e) => e.isNewLogin)).toBe(true);
    expect(line.sock().user?.id).toBe(`${LINE}:1@s.whatsapp.net`);
    expect(line.sock().user?.lid).toMatch(/^\d+:1@lid$/);
  });

  it('a text to a contact is really encrypted and decrypted by the contact; automatic receipts reach the line', async () => {
    const contact = fake.contact(CONTACT);
    const sent = await line.sock().sendMessage(`${CONTACT}@s.whatsapp.net`, { text: 'hola' });
    const got = await contact.waitFor((m) => m.id === sent?.key.id);
    expect(got.message.extendedTextMessage?.text ?? got.message.conversation).toBe('hola');
    expect(got.from).toBe(LINE);
    await until('read receipt', () => line.status.get(sent!.key.id!) === READ);
  });

  it('manual receipts: delivery then read, each seen by the line', async () => {
    fake.autoReceipts(false);
    try {
      const sent = await line.sock().sendMessage(`${CONTACT}@s.whatsapp.net`, { text: 'segundo' });
      const id = sent!.key.id!;
      await fake.contact(CONTACT).waitFor((m) => m.id === id);
      expect(line.status.get(id) ?? 0).toBeLessThan(DELIVERY_ACK);
      await fake.receipt(LINE, id, 'delivery', CONTACT);
      await until('delivery receipt', () => line.status.get(id) === DELIVERY_ACK);
      await fake.receipt(LINE, id, 'read', CONTACT);
      await until('read receipt', () => line.status.get(id) === READ);
    } finally {
      fake.autoReceipts(true);
    }
  });
});
