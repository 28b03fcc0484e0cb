import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import { GatewayFailure } from '../../src/core/ports/gateway.js';
import { EvolutionGateway } from '../../src/gateways/evolution.js';
import { numeroOfJid, profileOf } from '../../src/gateways/profile.js';
import { WahaGateway } from '../../src/gateways/waha.js';
import { until } from '../helpers/poll.js';
import { startEvolutionHarness } from './evolution-harness.js';
import { startWahaHarness } from './waha-harness.js';

/**
 * The session actions of the HTTP adapters against their fakes: logout,
 * restart and the phone's profile go to the gateway's own routes with its
 * key; every call has a deadline; the gateway's failures are classified as
 * the other calls' are (gateways/*-failure.ts).
 */

const LINE = '5215512345678';

async function failure(p: Promise<unknown>): Promise<GatewayFailure> {
  const err = await p.then(
    () => new Error('expected a GatewayFailure'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(GatewayFailure);
  return err as GatewayFailure;
}

/** A server that answers every request with `answer`, or never when `answer` is null. */
async function stub(answer: { status: number; body: unknown } | null): Promise<{ url: string; server: Server }> {
  const server = createServer((_req, res) => {
    if (answer) res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

async function closeStub(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
}

const options = (url: string) => ({
  url,
  key: 'gw-key-secreta',
  callbackUrl: 'http://x',
  secret: 's',
  timeoutMs: 300,
  sendTimeoutMs: 300,
  clock: new ManualClock(),
});

describe('Evolution: logout, restart, profile', () => {
  let h: Awaited<ReturnType<typeof startEvolutionHarness>>;
  let n = 0;
  const fresh = () => `evo-ses-${++n}`;
  const last = (method: string, path: string) => [...h.fake.requests].reverse().find((r) => r.method === method && r.path.startsWith(path));

  async function linked(): Promise<string> {
    const i = fresh();
    await h.gateway.ensureInstance(i, { numero: LINE });
    await h.gateway.connect(i, LINE);
    await h.scan(i);
    return i;
  }

  beforeAll(async () => {
    h = await startEvolutionHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('logout is DELETE /instance/logout/{instance} with the global apikey; the fake posts the close', async () => {
    const i = await linked();
    await h.gateway.logout(i);
    const r = last('DELETE', `/instance/logout/${i}`)!;
    expect(r.headers.apikey).toBe(h.fake.apiKey);
    expect(h.fake.instances.get(i)).toMatchObject({ state: 'close', linked: false });
  });

  it('restart is POST /instance/restart/{instance}: a linked one reconnects (connecting); an unlinked one shows a QR (need_scan); a closed one is logged_out', async () => {
    const i = await linked();
    expect(await h.gateway.restart(i)).toBe('connecting');
    const r = last('POST', `/instance/restart/${i}`)!;
    expect(r.headers.apikey).toBe(h.fake.apiKey);
    expect(r.body).toBeNull();
    await until(async () => (await h.gateway.status(i)) === 'connected', { what: 'connected again' });

    const q = fresh();
    await h.gateway.ensureInstance(q, { numero: LINE });
    await h.gateway.connect(q, LINE);
    expect(await h.gateway.restart(q)).toBe('need_scan');

    // Closed: Evolution answers 200 {error:true, message: ...not connected}: there is no session to restart.
    const c = fresh();
    await h.gateway.ensureInstance(c, { numero: LINE });
    expect(await h.gateway.restart(c)).toBe('logged_out');
    expect(await h.gateway.restart('evo-ses-nunca')).toBe('logged_out');
  });

  it('profile is GET /instance/fetchInstances?instanceName=: profileName and the digits of ownerJid; null before a link', async () => {
    const i = await linked();
    expect(await h.gateway.profile(i)).toEqual({ nombre: 'Línea', numero: LINE });
    const r = last('GET', '/instance/fetchInstances')!;
    expect(r.path).toBe(`/instance/fetchInstances?instanceName=${i}`);
    expect(r.headers.apikey).toBe(h.fake.apiKey);
    const q = fresh();
    await h.gateway.ensureInstance(q, { numero: LINE });
    expect(await h.gateway.profile(q)).toBeNull();
  });

  it('failures, classified as every call: a 500 and a refused key are transient, a restart {error:true} of another kind too; the key is never in the message', async () => {
    for (const [answer, said] of [
      [{ status: 500, body: { status: 500, error: 'Internal Server Error', response: { message: ['boom gw-key-secreta'] } } }, /500/],
      [{ status: 401, body: { status: 401, error: 'Unauthorized', response: { message: 'Unauthorized' } } }, /API key/],
    ] as const) {
      const { url, server } = await stub(answer);
      const gw = new EvolutionGateway(options(url), { qrRetryPauseMs: 0 });
      try {
        for (const call of [() => gw.logout('x'), () => gw.restart('x'), () => gw.profile('x')]) {
          const f = await failure(call());
          expect(f.kind).toBe('transient');
          expect(f.message).toMatch(said);
          expect(f.message).not.toContain('gw-key-secreta');
        }
      } finally {
        await gw.close();
        await closeStub(server);
      }
    }
    const { url, server } = await stub({ status: 200, body: { error: true, message: 'Error: Connection Failure' } });
    const gw = new EvolutionGateway(options(url), { qrRetryPauseMs: 0 });
    try {
      const f = await failure(gw.restart('x'));
      expect(f.kind).toBe('transient');
      expect(f.message).toContain('Connection Failure');
    } finally {
      await gw.close();
      await closeStub(server);
    }
  });

  it('a gateway that never answers: each call ends at its deadline as a transient failure', async () => {
    const { url, server } = await stub(null);
    const gw = new EvolutionGateway(options(url), { qrRetryPauseMs: 0 });
    try {
      for (const call of [() => gw.logout('x'), () => gw.restart('x'), () => gw.profile('x')]) expect((await failure(call())).kind).toBe('transient');
    } finally {
      await gw.close();
      await closeStub(server);
    }
  });
});

describe('WAHA: logout, restart, profile', () => {
  let h: Awaited<ReturnType<typeof startWahaHarness>>;
  let n = 0;
  const fresh = () => `waha-ses-${++n}`;
  const last = (method: string, path: string) => [...h.fake.requests].reverse().find((r) => r.method === method && r.path === path);

  async function linked(): Promise<string> {
    const i = fresh();
    await h.gateway.ensureInstance(i, { numero: LINE });
    await until(async () => (await h.gateway.connect(i, LINE)).status === 'need_scan', { what: 'a QR' });
    await h.scan(i);
    return i;
  }

  beforeAll(async () => {
    h = await startWahaHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('logout is POST /api/sessions/{session}/logout with the x-api-key; WAHA restarts the session for a new scan', async () => {
    const i = await linked();
    await h.gateway.logout(i);
    const r = last('POST', `/api/sessions/${i}/logout`)!;
    expect(r.headers['x-api-key']).toBe(h.fake.apiKey);
    await until(async () => (await h.gateway.status(i)) === 'need_scan', { what: 'waiting for a new scan' });
  });

  it('restart is POST /api/sessions/{session}/restart: STARTING is connecting, back to WORKING with the kept link; unknown is logged_out', async () => {
    const i = await linked();
    expect(await h.gateway.restart(i)).toBe('connecting');
    const r = last('POST', `/api/sessions/${i}/restart`)!;
    expect(r.headers['x-api-key']).toBe(h.fake.apiKey);
    await until(async () => (await h.gateway.status(i)) === 'connected', { what: 'WORKING again' });
    expect(h.fake.sessions.get(i)!.starts).toBeGreaterThanOrEqual(2);
    expect(await h.gateway.restart('waha-ses-nunca')).toBe('logged_out');
  });

  it('profile is GET /api/sessions/{session}/me: pushName and the digits of id; null without a link or a session', async () => {
    const i = await linked();
    expect(await h.gateway.profile(i)).toEqual({ nombre: 'Línea de prueba', numero: LINE });
    expect(last('GET', `/api/sessions/${i}/me`)!.headers['x-api-key']).toBe(h.fake.apiKey);
    await h.gateway.logout(i);
    expect(await h.gateway.profile(i)).toBeNull();
    expect(await h.gateway.profile('waha-ses-nunca')).toBeNull();
  });

  it('failures: a 500 and a refused key are transient, a 400 permanent; a gateway that never answers ends at the deadline', async () => {
    for (const [answer, kind] of [
      [{ status: 500, body: { statusCode: 500, exception: { message: 'boom', name: 'Error' } } }, 'transient'],
      [{ status: 401, body: { statusCode: 401, message: 'Unauthorized' } }, 'transient'],
      [{ status: 400, body: { statusCode: 400, message: 'bad request', error: 'Bad Request' } }, 'permanent'],
      [null, 'transient'],
    ] as const) {
      const { url, server } = await stub(answer);
      const gw = new WahaGateway(options(url), { pollPauseMs: 0 });
      try {
        for (const call of [() => gw.logout('x'), () => gw.restart('x'), () => gw.profile('x')]) expect((await failure(call())).kind).toBe(kind);
      } finally {
        await gw.close();
        await closeStub(server);
      }
    }
  });
});

describe('the phone from a WhatsApp id (pure)', () => {
  it('digits of a phone jid, with or without a device; null for @lid, groups and junk', () => {
    expect(numeroOfJid('5215512345678@s.whatsapp.net')).toBe(LINE);
    expect(numeroOfJid('5215512345678:12@s.whatsapp.net')).toBe(LINE);
    expect(numeroOfJid('5215512345678@c.us')).toBe(LINE);
    for (const x of ['123456789012345@lid', '120363025246125486@g.us', '', null, 42, 'abc@c.us']) expect(numeroOfJid(x)).toBeNull();
  });

  it('a profile with what is known; null when neither', () => {
    expect(profileOf('  Ventas ', '5215512345678@c.us')).toEqual({ nombre: 'Ventas', numero: LINE });
    expect(profileOf(null, '5215512345678@c.us')).toEqual({ nombre: null, numero: LINE });
    expect(profileOf('Ventas', '1@lid')).toEqual({ nombre: 'Ventas', numero: null });
    expect(profileOf('', undefined)).toBeNull();
  });
});
