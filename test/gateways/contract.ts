import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayFailure, type GatewayEvent, type OutboundMessage } from '../../src/core/ports/gateway.js';
import type { SessionStatus } from '../../src/core/ports/model.js';
import { until } from '../helpers/poll.js';
import type { GatewayHarness } from './harness.js';

/** Tiny valid files of each media kind (magic numbers are what gateways and pasarela sniff). */
export const SAMPLES = {
  png: Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex'),
  pdf: Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n'),
  ogg: Buffer.concat([Buffer.from('OggS'), Buffer.alloc(60, 1)]),
  webp: Buffer.concat([Buffer.from('RIFF'), Buffer.from([30, 0, 0, 0]), Buffer.from('WEBPVP8 '), Buffer.alloc(18, 2)]),
};

/**
 * The Gateway interface's contract, the same for the simulator and for every
 * adapter (each against its fake over real HTTP): what pasarela's core relies
 * on. Gateway-specific request shapes are tested next to each adapter.
 */
export function runGatewayContract(label: string, start: () => Promise<GatewayHarness>): void {
  describe(`gateway contract: ${label}`, () => {
    let h: GatewayHarness;
    let dir: string;
    const events: GatewayEvent[] = [];
    let n = 0;
    const fresh = () => `contract-${label}-${++n}`;
    const LINE = '5215512345678';
    const TO = '5215587654321';

    const sessionEvents = (i: string) => events.filter((e) => e.type === 'session' && e.instancia === i).map((e) => (e as { status: SessionStatus }).status);
    const file = (name: string, bytes: Buffer) => {
      const p = join(dir, name);
      writeFileSync(p, bytes);
      return p;
    };

    /** A QR, once the gateway has one (some answer "connecting" first). */
    async function qrOf(i: string): Promise<string> {
      return until(
        async () => {
          const r = await h.gateway.connect(i, LINE);
          expect(['need_scan', 'connecting']).toContain(r.status);
          return r.status === 'need_scan' && r.qr;
        },
        { what: `a QR for ${i}` },
      );
    }

    async function linked(): Promise<string> {
      const i = fresh();
      await h.gateway.ensureInstance(i, { numero: LINE });
      await qrOf(i);
      await h.scan(i);
      await until(async () => (await h.gateway.status(i)) === 'connected', { what: `${i} connected` });
      return i;
    }

    async function failure(p: Promise<unknown>): Promise<GatewayFailure> {
      const err = await p.then(
        () => {
          throw new Error('expected a GatewayFailure');
        },
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(GatewayFailure);
      return err as GatewayFailure;
    }

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'pasarela-contract-'));
      h = await start();
      h.gateway.onEvent((e) => {
        events.push(e);
      });
      await h.gateway.start();
    });
    afterAll(async () => {
      await h?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('creates or adopts an instance idempotently; a new instance is not connected', async () => {
      const i = fresh();
      await h.gateway.ensureInstance(i, { numero: LINE, token: 'a'.repeat(64) });
      await h.gateway.ensureInstance(i, { numero: LINE });
      expect(await h.gateway.status(i)).not.toBe('connected');
    });

    it('links by QR: the QR holds until it rotates, then changes; a scan connects, reported by an event', async () => {
      const i = fresh();
      await h.gateway.ensureInstance(i, { numero: LINE });
      const a = await qrOf(i);
      expect((await h.gateway.connect(i, LINE)).qr).toBe(a);
      await h.rotateQr(i);
      const b = await qrOf(i);
      expect(b).not.toBe(a);
      await h.scan(i);
      await until(() => sessionEvents(i).includes('connected'), { what: 'a connected event' });
      expect(await h.gateway.status(i)).toBe('connected');
      expect(await h.gateway.connect(i, LINE)).toEqual({ status: 'connected', qr: '' });
    });

    it('links by pairing code instead of a QR', async () => {
      const i = fresh();
      await h.gateway.ensureInstance(i, { numero: LINE });
      const r = await until(
        async () => {
          const p = await h.gateway.pairingCode(i, LINE);
          return p.status === 'need_scan' && p.code ? p : undefined;
        },
        { what: 'a pairing code' },
      );
      expect(r.code).toMatch(/^[A-Z0-9]{4}-?[A-Z0-9]{4}$/);
      await h.enterCode(i, r.code);
      await until(async () => (await h.gateway.status(i)) === 'connected', { what: `${i} connected` });
      expect(await h.gateway.pairingCode(i, LINE)).toEqual({ status: 'connected', code: '' });
    });

    it('gives a pairing code for a line that already showed a QR, and that code links it', async () => {
      const i = fresh();
      await h.gateway.ensureInstance(i, { numero: LINE });
      await qrOf(i);
      const r = await until(
        async () => {
          const p = await h.gateway.pairingCode(i, LINE);
          expect(['need_scan', 'connecting']).toContain(p.status);
          return p.status === 'need_scan' && p.code ? p : undefined;
        },
        { what: 'a pairing code after the QR' },
      );
      expect(r.code).toMatch(/^[A-Z0-9]{4}-?[A-Z0-9]{4}$/);
      await h.enterCode(i, r.code);
      await until(async () => (await h.gateway.status(i)) === 'connected', { what: `${i} connected` });
    });

    it('sends every kind it supports, and says which it does not', async () => {
      const i = await linked();
      const base = { destinatario: TO };
      const msgs: OutboundMessage[] = [
        { ...base, msgId: 'c-texto', tipo: 'texto', texto: 'hola 👋' },
        { ...base, msgId: 'c-img-url', tipo: 'imagen', url: 'https://media.example/a.png', mime: 'image/png', caption: 'una foto' },
        { ...base, msgId: 'c-img-b64', tipo: 'imagen', filePath: file('c.png', SAMPLES.png), mime: 'image/png', caption: 'otra' },
        { ...base, msgId: 'c-doc', tipo: 'documento', filePath: file('c.pdf', SAMPLES.pdf), mime: 'application/pdf', filename: 'factura.pdf' },
        { ...base, msgId: 'c-voz', tipo: 'audio', filePath: file('c.ogg', SAMPLES.ogg), mime: 'audio/ogg', ptt: true },
        { ...base, msgId: 'c-audio', tipo: 'audio', url: 'https://media.example/a.mp3', mime: 'audio/mpeg' },
        { ...base, msgId: 'c-video', tipo: 'video', url: 'https://media.example/v.mp4', mime: 'video/mp4', caption: 'un video' },
        { ...base, msgId: 'c-sticker', tipo: 'sticker', filePath: file('c.webp', SAMPLES.webp), mime: 'image/webp' },
      ];
      const ids: string[] = [];
      for (const m of msgs) {
        if (h.gateway.capabilities.unsupported[m.tipo]) {
          const f = await failure(h.gateway.send(i, m));
          expect(f.kind).toBe('permanent');
          expect(f.message).toContain(m.tipo === 'sticker' ? 'sticker' : m.tipo);
          continue;
        }
        const { gatewayMsgId } = await h.gateway.send(i, m);
        expect(gatewayMsgId).toMatch(/\S{6,}/);
        ids.push(gatewayMsgId);
        const rec = h.sent().find((s) => s.gatewayMsgId === gatewayMsgId);
        expect(rec, `${m.msgId} reached the network`).toBeDefined();
        expect(rec).toMatchObject({ instancia: i, to: TO, tipo: m.tipo });
        if (m.texto) expect(rec!.text).toBe(m.texto);
        if (m.caption) expect(rec!.text).toBe(m.caption);
        if (m.url) expect(rec!.url).toBe(m.url);
        if (m.filePath) expect(rec!.bytes?.equals(readFileSync(m.filePath))).toBe(true);
        if (m.tipo === 'audio') expect(Boolean(rec!.ptt)).toBe(Boolean(m.ptt));
        if (m.filename) expect(rec!.filename).toBe(m.filename);
      }
      expect(new Set(ids).size).toBe(ids.length);
    });

    it('reports receipts for a sent message, by the id send() returned', async () => {
      const i = await linked();
      const { gatewayMsgId } = await h.gateway.send(i, { msgId: 'c-ack', tipo: 'texto', destinatario: TO, texto: 'ack me' });
      await h.ack(i, gatewayMsgId, 'entregado');
      await h.ack(i, gatewayMsgId, 'leido');
      const mine = events.filter((e) => e.type === 'receipt' && e.gatewayMsgId === gatewayMsgId).map((e) => (e as { estado: string }).estado);
      expect(mine).toEqual(['entregado', 'leido']);
    });

    it('reports an incoming message with its sender, text and a stable dedupe key', async () => {
      const i = await linked();
      const id = await h.receive(i, '5491155554444', 'buenas');
      const e = await until(() => events.find((x) => x.type === 'inbound' && x.instancia === i), { what: 'the inbound event' });
      expect(e).toMatchObject({ type: 'inbound', instancia: i, de: '5491155554444', tipo: 'texto', texto: 'buenas' });
      if (e.type === 'inbound') {
        expect(e.gatewayMsgId).toBe(id.split('_').pop());
        expect(e.dedupeKey).toMatch(/\S/);
      }
    });

    it('classifies failures: not on the network is permanent, rate limits are rate_limited, not linked is transient', async () => {
      const i = await linked();
      await h.notOnNetwork('5215500000001');
      expect((await failure(h.gateway.send(i, { msgId: 'c-nope', tipo: 'texto', destinatario: '5215500000001', texto: 'x' }))).kind).toBe('permanent');
      h.rateLimitNext(1);
      const rl = await failure(h.gateway.send(i, { msgId: 'c-rl', tipo: 'texto', destinatario: TO, texto: 'x' }));
      expect(rl.kind).toBe('rate_limited');
      expect(rl.retryAfterMs).toBeGreaterThan(0);
      await h.gateway.send(i, { msgId: 'c-after-rl', tipo: 'texto', destinatario: TO, texto: 'x' });
      const idle = fresh();
      await h.gateway.ensureInstance(idle, { numero: LINE });
      expect((await failure(h.gateway.send(idle, { msgId: 'c-idle', tipo: 'texto', destinatario: TO, texto: 'x' }))).kind).toBe('transient');
    });

    it('a gateway that is down fails transiently, and works again when it is back', async () => {
      const i = await linked();
      await h.down();
      try {
        expect((await failure(h.gateway.send(i, { msgId: 'c-down', tipo: 'texto', destinatario: TO, texto: 'x' }))).kind).toBe('transient');
        expect((await failure(h.gateway.status(i))).kind).toBe('transient');
        expect((await failure(h.gateway.connect(fresh(), LINE))).kind).toBe('transient');
      } finally {
        await h.up();
      }
      await until(async () => (await h.gateway.status(i).catch(() => 'down')) === 'connected', { what: 'the gateway back' });
      await h.gateway.send(i, { msgId: 'c-up', tipo: 'texto', destinatario: TO, texto: 'x' });
    });

    it('a phone that removes the device ends the session, by event and by status', async () => {
      const i = await linked();
      await h.phoneLogout(i);
      await until(
        () => {
          const s = sessionEvents(i);
          return s.length > 0 && s[s.length - 1] !== 'connected';
        },
        { what: 'a session event off connected' },
      );
      expect(await h.gateway.status(i)).not.toBe('connected');
    });

    it('does not report a silently dead session as connected', async () => {
      if (!h.killSilently) return;
      const i = await linked();
      await h.killSilently(i);
      expect(await h.gateway.status(i)).not.toBe('connected');
    });

    it('restart keeps the link: connecting (or already back), then connected again with no new scan; the profile names the phone', async () => {
      const i = await linked();
      const p = await h.gateway.profile(i);
      expect(p?.numero).toBe(LINE);
      expect(p?.nombre).toEqual(expect.any(String));
      expect(['connecting', 'connected']).toContain(await h.gateway.restart(i));
      await until(async () => (await h.gateway.status(i)) === 'connected', { what: `${i} connected again` });
      await h.gateway.send(i, { msgId: `c-restart-${label}`, tipo: 'texto', destinatario: TO, texto: 'x' });
    });

    it('restart of an instance the gateway does not have is logged_out; its profile is null', async () => {
      const i = fresh();
      expect(await h.gateway.restart(i)).toBe('logged_out');
      expect(await h.gateway.profile(i)).toBeNull();
    });

    it('a logged-out session has no profile', async () => {
      const i = await linked();
      await h.gateway.logout(i);
      await until(async () => (await h.gateway.status(i)) !== 'connected', { what: `${i} off connected` });
      expect(await h.gateway.profile(i)).toBeNull();
    });

    it('logout and delete are idempotent; a deleted instance has no session', async () => {
      const i = await linked();
      await h.gateway.logout(i);
      await h.gateway.logout(i);
      expect(await h.gateway.status(i)).not.toBe('connected');
      await h.gateway.deleteInstance(i);
      await h.gateway.deleteInstance(i);
      expect(['logged_out', 'unknown']).toContain(await h.gateway.status(i));
    });
  });
}
