import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { instanceSecret } from '../../src/gateways/inbound-secret.js';
import type { SqliteStore } from '../../src/store/sqlite/store.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { expectOk } from '../helpers/expect.js';
import { linkedLine, numeroNuevo, type Line } from '../server/send-helpers.js';
import { evolutionNetwork, wahaNetwork, type Network } from './gateways-network.js';

/**
 * What a gateway's webhook call may change is bound to the instance whose
 * secret authenticated it (adversarial findings N5, N6): a receipt signed
 * with one line's secret cannot fail (and refund) another client's message,
 * and a third party's text that is not well-formed Unicode is kept with
 * U+FFFD in place of each unpaired surrogate and NUL, never stored as bytes
 * that are not UTF-8.
 */
const serverSecret = (s: TestServer) => readFileSync(join(s.dataDir, 'gateway-secret'), 'utf8').trim();

describe.each([
  ['evolution', evolutionNetwork],
  ['waha', wahaNetwork],
] as const)('inbound calls bound to their instance on %s', (name, make) => {
  let net: Network;
  let s: TestServer;
  let a: Line;
  let b: Line;
  const instancia = async (l: Line) => (await s.core.store.getCelular(l.celularId))!.gateway_instancia!;
  const hook = async (l: Line, body: unknown) =>
    api(s.url, 'POST', `/gateway/${name}/${await instancia(l)}`, {
      headers: { 'x-pasarela-secret': instanceSecret(serverSecret(s), name, await instancia(l)) },
      json: body,
    });

  beforeAll(async () => {
    net = await make();
    s = await startTestServer({ ...net.serve, allowPrivateUrls: true, healthIntervalMs: 0 });
    a = await linkedLine(s, { saldo: 100, link: false });
    b = await linkedLine(s, { saldo: 100, link: false });
    for (const l of [a, b]) {
      expectOk(await api(s.url, 'POST', `/api/celular_qr.php?id=${l.celularId}`, { key: l.clientKey }));
      await net.scan(s, await instancia(l));
      expect((await s.core.store.getCelular(l.celularId))!.estado).toBe('activo');
    }
  });
  afterAll(async () => {
    await s?.stop();
    await net?.close();
  });

  /** A failure receipt for `gid` as this gateway posts it. */
  const failure = async (l: Line, gid: string) =>
    name === 'evolution'
      ? { event: 'messages.update', instance: await instancia(l), data: { keyId: gid, fromMe: true, status: 'ERROR' } }
      : { event: 'message.ack', session: await instancia(l), payload: { id: gid, fromMe: true, ack: -1, ackName: 'ERROR' } };

  it("a receipt signed with A's instance secret cannot fail B's message nor refund it; B's own can", async () => {
    const sent = await api(s.url, 'POST', '/api/mensaje_enviar_texto.php', {
      key: b.celularKey,
      json: { destinatario: numeroNuevo(), mensaje: 'de B', directo: 1 },
    });
    expectOk(sent);
    const gid = sent.body.gateway_msg_id as string;
    const saldo = async () => (await s.core.store.getCliente(b.clienteId))!.saldo_global;
    const before = await saldo();

    expect((await hook(a, await failure(a, gid))).status).toBe(200);
    expect(await s.core.store.getMensaje(sent.body.msg_id)).toMatchObject({ estado: 'enviado', cobrado: 1, error: null });
    expect(await saldo()).toBe(before);

    // The same receipt from B's own instance applies: the call above was refused for the instance, not the shape.
    expect((await hook(b, await failure(b, gid))).status).toBe(200);
    expect(await s.core.store.getMensaje(sent.body.msg_id)).toMatchObject({ estado: 'error', cobrado: 0 });
    expect(await saldo()).toBe(before + 1);
  });

  it('an incoming text with a lone surrogate and a NUL is kept with U+FFFD for each, stored as valid UTF-8', async () => {
    const i = await instancia(a);
    const call = net.inboundCall!(s, i, `ID-ILL-${name}`, '5491166667777', 'a\ud800b\u0000c');
    const r = await api(s.url, 'POST', `/gateway/${name}/${i}`, { headers: call.headers, json: call.body });
    expect(r.status, r.text).toBe(200);
    const db = (s.core.store as SqliteStore).db;
    const row = db.prepare('SELECT texto, hex(texto) AS bytes FROM recibidos WHERE celular_id = ? ORDER BY id DESC LIMIT 1').get(a.celularId) as {
      texto: string;
      bytes: string;
    };
    expect(row.texto).toBe('a\ufffdb\ufffdc');
    expect(row.bytes).toBe('61EFBFBD62EFBFBD63');
  });
});
