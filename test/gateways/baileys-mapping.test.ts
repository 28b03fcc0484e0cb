import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WAMessage, WAMessageUpdate } from 'baileys';
import { afterAll, describe, expect, it } from 'vitest';
import { GatewayFailure } from '../../src/core/ports/gateway.js';
import { closeCode, closeOutcome } from '../../src/gateways/baileys/close-codes.js';
import { inboundOf, receiptOf, userReceiptOf } from '../../src/gateways/baileys/inbound.js';
import { contentOf, jidOf, networkIdOf } from '../../src/gateways/baileys/outbound.js';

/** The engine's translations: close codes to session statuses, Baileys' events to gateway events, our messages to Baileys' content. */

describe('a closed socket, by its code', () => {
  it('logged out from the phone drops the state and stays down', () => {
    expect(closeOutcome(401, true)).toMatchObject({ status: 'logged_out', reconnect: 'no', forget: true });
  });
  it('banned or locked stays down and keeps the state', () => {
    for (const code of [402, 403, 406]) expect(closeOutcome(code, true)).toMatchObject({ status: 'logged_out', reconnect: 'no', forget: false });
  });
  it('replaced does not take the session back', () => {
    expect(closeOutcome(440, true)).toMatchObject({ status: 'disconnected', reconnect: 'no' });
  });
  it('restart required reconnects at once, also right after a scan', () => {
    expect(closeOutcome(515, true)).toMatchObject({ status: 'connecting', reconnect: 'now' });
    expect(closeOutcome(515, false)).toMatchObject({ status: 'connecting', reconnect: 'now' });
  });
  it('a lost connection of a linked line reconnects with backoff; an unlinked one whose QR ran out does not', () => {
    for (const code of [408, 428, 500, 503, undefined]) expect(closeOutcome(code, true)).toMatchObject({ status: 'connecting', reconnect: 'later' });
    expect(closeOutcome(408, false)).toMatchObject({ status: 'disconnected', reconnect: 'no' });
  });
  it("reads the code off Baileys' Boom error", () => {
    expect(closeCode({ output: { statusCode: 515 } })).toBe(515);
    expect(closeCode(new Error('x'))).toBeUndefined();
    expect(closeCode(undefined)).toBeUndefined();
  });
});

const msg = (over: Partial<WAMessage> & { key: WAMessage['key'] }): WAMessage => ({ messageTimestamp: 1_700_000_000, ...over });

describe("Baileys' events as gateway events", () => {
  it('a text from a person, keyed for once-only handling', () => {
    const e = inboundOf(
      'pasarela-1',
      msg({ key: { id: 'ABC', remoteJid: '5215550001111@s.whatsapp.net', fromMe: false }, message: { conversation: 'hola' } }),
      5,
    );
    expect(e).toEqual({
      type: 'inbound',
      instancia: 'pasarela-1',
      de: '5215550001111',
      tipo: 'texto',
      texto: 'hola',
      media: null,
      gatewayMsgId: 'ABC',
      at: 1_700_000_000_000,
      dedupeKey: 'baileys:pasarela-1:ABC',
    });
  });
  it('a sender hidden behind a LID: its number when the key carries it, else the LID', () => {
    const withPn = inboundOf(
      'i',
      msg({ key: { id: 'A', remoteJid: '100@lid', remoteJidAlt: '5215550001111@s.whatsapp.net', fromMe: false }, message: { conversation: 'x' } }),
      0,
    );
    expect(withPn).toMatchObject({ de: '5215550001111' });
    const bare = inboundOf('i', msg({ key: { id: 'B', remoteJid: '100@lid', fromMe: false }, message: { conversation: 'x' } }), 0);
    expect(bare).toMatchObject({ de: '100@lid' });
  });
  it('media with its caption and type; our own messages, groups and status are not inbound', () => {
    const img = inboundOf(
      'i',
      msg({
        key: { id: 'C', remoteJid: '52155@s.whatsapp.net', fromMe: false },
        message: { imageMessage: { mimetype: 'image/jpeg', caption: 'foto', fileLength: 10 } },
      }),
      0,
    );
    expect(img).toMatchObject({ tipo: 'imagen', texto: 'foto', media: { mime: 'image/jpeg', bytes: 10 } });
    expect(inboundOf('i', msg({ key: { id: 'D', remoteJid: '52155@s.whatsapp.net', fromMe: true }, message: { conversation: 'x' } }), 0)).toBeNull();
    expect(inboundOf('i', msg({ key: { id: 'E', remoteJid: '1203@g.us', fromMe: false }, message: { conversation: 'x' } }), 0)).toBeNull();
    expect(inboundOf('i', msg({ key: { id: 'F', remoteJid: 'status@broadcast', fromMe: false }, message: { conversation: 'x' } }), 0)).toBeNull();
  });
  it('receipts of our messages: delivered, read, played, failed', () => {
    const u = (status: number, fromMe = true) => ({ key: { id: 'M', remoteJid: '52155@s.whatsapp.net', fromMe }, update: { status } }) as WAMessageUpdate;
    expect(receiptOf('i', u(3), 7)).toEqual({ type: 'receipt', instancia: 'i', gatewayMsgId: 'M', estado: 'entregado', at: 7 });
    expect(receiptOf('i', u(4), 7)).toMatchObject({ estado: 'leido' });
    expect(receiptOf('i', u(5), 7)).toMatchObject({ estado: 'leido' });
    expect(receiptOf('i', u(0), 7)).toMatchObject({ estado: 'error' });
    expect(receiptOf('i', u(2), 7)).toBeNull();
    expect(receiptOf('i', u(4, false), 7)).toBeNull();
    expect(userReceiptOf('i', { key: { id: 'M', fromMe: true }, receipt: { userJid: 'x', readTimestamp: 1 } }, 7)).toMatchObject({ estado: 'leido' });
    expect(userReceiptOf('i', { key: { id: 'M', fromMe: true }, receipt: { userJid: 'x', receiptTimestamp: 1 } }, 7)).toMatchObject({ estado: 'entregado' });
  });
});

describe('our messages as Baileys content', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pasarela-baileys-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a person by number, and the same network id for the same msg_id', () => {
    expect(jidOf('+52 1 555 000 1111')).toBe('5215550001111@s.whatsapp.net');
    expect(networkIdOf('m1')).toBe(networkIdOf('m1'));
    expect(networkIdOf('m1')).not.toBe(networkIdOf('m2'));
    expect(networkIdOf('m1')).toMatch(/^3EB0[0-9A-F]{36}$/);
  });
  it('text, and media as a path Baileys streams from', async () => {
    expect(await contentOf({ msgId: 'a', tipo: 'texto', destinatario: '52155', texto: 'hola' })).toEqual({ text: 'hola' });
    const f = join(dir, 'doc');
    writeFileSync(f, '%PDF-1.4');
    const doc = await contentOf({ msgId: 'b', tipo: 'documento', destinatario: '52155', filePath: f, mime: 'application/pdf', filename: 'factura' });
    expect(doc).toMatchObject({ document: { url: f }, mimetype: 'application/pdf', fileName: 'factura.pdf' });
    const audio = await contentOf({ msgId: 'c', tipo: 'audio', destinatario: '52155', filePath: f, ptt: true });
    expect(audio).toMatchObject({ audio: { url: f }, ptt: true });
  });
  it('a media message without its file is refused for good', async () => {
    await expect(contentOf({ msgId: 'd', tipo: 'imagen', destinatario: '52155', filePath: join(dir, 'gone') })).rejects.toSatisfy(
      (e) => e instanceof GatewayFailure && e.kind === 'permanent',
    );
  });
});
