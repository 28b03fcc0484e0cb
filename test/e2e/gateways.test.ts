import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/core/time/clock.js';
import { api, startTestServer, type ApiResponse, type TestServer } from '../helpers/server.js';
import { expectError, expectOk } from '../helpers/expect.js';
import {
  b64,
  editCelular,
  linkedLine,
  MP3,
  numeroNuevo,
  PDF,
  startMediaServer,
  waitEstado,
  WEBP,
  type Line,
  type MediaServer,
} from '../server/send-helpers.js';
import { setWebhook, startReceiver, type Receiver } from '../server/webhook-helpers.js';
import { evolutionNetwork, simNetwork, wahaNetwork, type Network } from './gateways-network.js';
import { until } from '../helpers/poll.js';

/**
 * The same end-to-end flow on the simulator and on each real gateway's fake
 * (Evolution API, WAHA): create a line, link it, send every kind directo and
 * queued, receive acks and an incoming message, get the webhook events out,
 * and live through the gateway being down, a silently dead session and a
 * phone logout. pasarela runs whole: real HTTP in, real HTTP to the gateway,
 * the gateway's webhooks over real HTTP back in.
 */
const NETWORKS: Array<[string, () => Promise<Network>]> = [
  ['sim', simNetwork],
  ['evolution', evolutionNetwork],
  ['waha', wahaNetwork],
];

describe.each(NETWORKS)('end to end on %s', (_name, make) => {
  let net: Network;
  let s: TestServer;
  let media: MediaServer;
  let hooks: Receiver;
  let line: Line;
  let instancia: string;
  const clock = () => s.clock as ManualClock;
  const TO = '5215587654321';
  const post = (path: string, body: Record<string, unknown>, key = line.celularKey): Promise<ApiResponse> =>
    api(s.url, 'POST', path, { key, json: { destinatario: TO, ...body } });
  const events = (evento: string) => hooks.hits.filter((h) => h.json?.evento === evento).map((h) => h.json.data);

  beforeAll(async () => {
    net = await make();
    s = await startTestServer({ ...net.serve, allowPrivateUrls: true, healthIntervalMs: 0, queue: { gapMinMs: 0, gapMaxMs: 0 } });
    media = await startMediaServer();
    hooks = await startReceiver(200);
    line = await linkedLine(s, { saldo: 100, link: false });
    instancia = (await s.core.store.getCelular(line.celularId))!.gateway_instancia!;
    expectOk(await setWebhook(s, line.clientKey, { url: hooks.url, eventos: ['all'] }));
    await editCelular(s, line, { max_envios_por_minuto: 1000 });
  });
  afterAll(async () => {
    await s?.stop();
    await media?.close();
    await hooks?.close();
    await net?.close();
  });

  it('links the line by QR: the gateway reports the scan, the line turns activo, session.status goes out', async () => {
    expect(instancia).toBe(`pasarela-${line.celularId}`);
    let qr: ApiResponse;
    await until(
      async () => {
        qr = await api(s.url, 'POST', `/api/celular_qr.php?id=${line.celularId}`, { key: line.clientKey });
        return qr.status === 200 && qr.body.status === 'need_scan' && qr.body.qr !== '';
      },
      { what: 'a QR' },
    );
    expect(qr!.body.estado).toBe('desconectado');
    await net.scan(s, instancia);
    await until(async () => (await s.core.store.getCelular(line.celularId))?.estado === 'activo', { what: 'celular activo' });
    await hooks.wait((h) => h.json?.evento === 'session.status' && h.json.data.status === 'connected', 5000, 'session.status connected');
    const st = await api(s.url, 'GET', `/api/celular_status.php?id=${line.celularId}`, { key: line.clientKey });
    expect(st.body).toMatchObject({ status: 'connected', estado: 'activo', status_actualizado_desde_gateway: true });
  });

  it('links a second line by pairing code', async () => {
    const numero = numeroNuevo();
    const r = await api(s.url, 'POST', '/api/celular_vincular_codigo.php', { key: line.clientKey, json: { numero } });
    expectOk(r);
    expect(r.body).toMatchObject({ creado: true, status: 'need_scan', codigo: expect.stringMatching(/^[A-Z0-9]{4}-?[A-Z0-9]{4}$/) });
    await net.enterCode(s, r.body.gateway_instancia, r.body.codigo);
    await until(async () => (await s.core.store.getCelular(r.body.celular_id))?.estado === 'activo', { what: 'second line activo' });
  });

  const KINDS: Array<{ tipo: string; path: string; body: () => Record<string, unknown> }> = [
    { tipo: 'texto', path: '/api/mensaje_enviar_texto.php', body: () => ({ mensaje: `hola ${Math.random()}` }) },
    { tipo: 'imagen', path: '/api/mensaje_enviar_imagen.php', body: () => ({ url: `${media.base}/img.png`, caption: `foto ${Math.random()}` }) },
    { tipo: 'documento', path: '/api/mensaje_enviar_documento_base64.php', body: () => ({ data_base64: b64(PDF), filename: `factura-${Math.random()}.pdf` }) },
    {
      tipo: 'audio',
      path: '/api/mensaje_enviar_audio_base64.php',
      body: () => ({ data_base64: b64(Buffer.concat([MP3, Buffer.from(String(Math.random()))])), ptt: true }),
    },
    { tipo: 'video', path: '/api/mensaje_enviar_video.php', body: () => ({ url: `${media.base}/video.mp4`, caption: `video ${Math.random()}` }) },
    {
      tipo: 'sticker',
      path: '/api/mensaje_enviar_sticker_base64.php',
      body: () => ({ data_base64: b64(Buffer.concat([WEBP, Buffer.alloc(1 + Math.floor(Math.random() * 50))])) }),
    },
  ];

  it('sends every kind directo and queued; receipts move each to leido; message.status goes out for each step', async () => {
    const sent: string[] = [];
    for (const k of KINDS) {
      for (const directo of [true, false]) {
        const saldoAntes = (await s.core.store.getCliente(line.clienteId))!.saldo_global;
        const r = await post(k.path, { ...k.body(), ...(directo ? { directo: 1 } : {}) });
        if (s.core.gateway.capabilities.unsupported[k.tipo as 'sticker']) {
          expectError(r, 415, 703);
          expect(r.body.error).toContain(k.tipo);
          expect((await s.core.store.getCliente(line.clienteId))!.saldo_global).toBe(saldoAntes);
          continue;
        }
        expectOk(r);
        if (directo) expect(r.body).toMatchObject({ modo: 'directo', estado: 'enviado', gateway_msg_id: expect.any(String) });
        else expect(r.body).toMatchObject({ modo: 'cola', estado: 'pendiente' });
        const m = await waitEstado(s, r.body.msg_id, 'enviado');
        expect(m.tipo).toBe(k.tipo);
        sent.push(m.msg_id);
      }
    }
    for (const id of sent) {
      const m = (await s.core.store.getMensaje(id))!;
      await net.ack(s, instancia, m.gateway_msg_id!, 'entregado');
      await net.ack(s, instancia, m.gateway_msg_id!, 'leido');
      await waitEstado(s, id, 'leido');
    }
    const h = await api(s.url, 'GET', `/api/historial_listar.php?celular_id=${line.celularId}&estado=leido&por_pagina=100`, { key: line.clientKey });
    expect(h.body.total).toBe(sent.length);
    await until(() => sent.every((id) => events('message.status').some((d) => d.msg_id === id && d.estado === 'leido')), {
      what: 'message.status leido for every message',
    });
    for (const id of sent) {
      const steps = events('message.status').filter((d) => d.msg_id === id);
      // One event per step, each naming the step before it. Several deliveries of a client are in flight at once, so
      // they may arrive out of order (docs/decisions.md D-44): the receiver rebuilds the order from estado_anterior.
      expect(steps.map((d) => d.estado).sort()).toEqual(['entregado', 'enviado', 'leido', 'pendiente']);
      expect(Object.fromEntries(steps.map((d) => [d.estado, d.estado_anterior]))).toEqual({
        pendiente: null,
        enviado: 'pendiente',
        entregado: 'enviado',
        leido: 'entregado',
      });
    }
  });

  it('an ack that arrives before the gateway has answered the send is applied, not lost', async () => {
    if (!net.ackBeforeReply) return;
    net.ackBeforeReply(true);
    try {
      const r = await post('/api/mensaje_enviar_texto.php', { mensaje: `rapido ${Math.random()}`, directo: 1 });
      expectOk(r);
      const m = await waitEstado(s, r.body.msg_id, 'entregado');
      expect(m.entregado_at).not.toBeNull();
    } finally {
      net.ackBeforeReply(false);
    }
  });

  it('an incoming message reaches the client once, however often the gateway delivers it', async () => {
    await net.receive(s, instancia, '5491155554444', 'hola pasarela');
    const ev = await hooks.wait((h) => h.json?.evento === 'messages.received' && h.json.data.texto === 'hola pasarela', 5000, 'messages.received');
    expect(ev.json.data).toMatchObject({ celular_id: line.celularId, de: '5491155554444', tipo: 'texto', gateway_msg_id: expect.any(String) });
    const kept = await api(s.url, 'GET', '/api/recibidos_listar.php?remitente=5491155554444', { key: line.celularKey });
    expectOk(kept);
    expect(kept.body.recibidos).toEqual([
      expect.objectContaining({ celular_id: line.celularId, de: '5491155554444', texto: 'hola pasarela', gateway_msg_id: ev.json.data.gateway_msg_id }),
    ]);
    if (!net.inboundCall) return;
    const call = (id: string, text: string) => net.inboundCall!(s, instancia, id, '5491166667777', text);
    const path = `/gateway/${net.name}/${instancia}`;
    for (const c of [call('DUP1', 'otra vez'), call('DUP1', 'otra vez'), call('DUP2', 'otra vez')]) {
      expectOk(await api(s.url, 'POST', path, { json: c.body, headers: c.headers }));
    }
    await until(() => events('messages.received').filter((d) => d.texto === 'otra vez').length >= 2, { what: 'two distinct messages' });
    // DUP2 came after the repeat, so a delivery for the repeat would exist by
    // now: once no delivery is left to make, the receiver has seen them all.
    await until(
      async () => {
        const r = await api(s.url, 'GET', '/api/webhook_entregas.php?limit=500', { key: line.clientKey });
        return (r.body.entregas as Array<{ estado: string }>).every((e) => e.estado === 'entregado');
      },
      { what: 'every delivery made' },
    );
    expect(
      events('messages.received')
        .filter((d) => d.texto === 'otra vez')
        .map((d) => d.gateway_msg_id)
        .sort(),
    ).toEqual(['DUP1', 'DUP2']);
    // The inbox keeps them as the webhook saw them: the repeat once.
    const inbox = await api(s.url, 'GET', `/api/recibidos_listar.php?celular_id=${line.celularId}&remitente=5491166667777`, { key: line.clientKey });
    expectOk(inbox);
    expect(inbox.body.recibidos.map((r: { gateway_msg_id: string }) => r.gateway_msg_id).sort()).toEqual(['DUP1', 'DUP2']);
    const forged = call('DUP3', 'forjado');
    const bad = await api(s.url, 'POST', path, { json: forged.body, headers: { 'x-pasarela-secret': 'f'.repeat(64) } });
    expectError(bad, 401, 200);
    const none = await api(s.url, 'POST', path, { json: forged.body });
    expectError(none, 401, 200);
  });

  it("a Mexican mobile's WhatsApp id (521…): the event keeps the gateway's digits, the inbox keeps 52… like the history, found by either", async () => {
    await net.receive(s, instancia, '5215599990000', 'hola desde méxico');
    const ev = await hooks.wait((h) => h.json?.evento === 'messages.received' && h.json.data.texto === 'hola desde méxico', 5000, 'messages.received');
    // The webhook payload is a contract: the sender as the gateway gave it.
    expect(ev.json.data.de).toBe('5215599990000');
    for (const remitente of ['5215599990000', '525599990000']) {
      const kept = await api(s.url, 'GET', `/api/recibidos_listar.php?remitente=${remitente}`, { key: line.celularKey });
      expectOk(kept);
      expect(kept.body.recibidos, remitente).toEqual([
        expect.objectContaining({ de: '525599990000', texto: 'hola desde méxico', gateway_msg_id: ev.json.data.gateway_msg_id }),
      ]);
    }
  });

  it('a gateway that is down: direct sends answer 502 refunded; queued ones wait and go when it is back', async () => {
    await net.down(s);
    let queued: string;
    try {
      const credit = async () => (await s.core.store.getCelular(line.celularId))!.saldo_actual + (await s.core.store.getCliente(line.clienteId))!.saldo_global;
      const before = await credit();
      const d = await post('/api/mensaje_enviar_texto.php', { mensaje: `caido ${Math.random()}`, directo: 1 });
      expectError(d, 502, 700);
      const q = await post('/api/mensaje_enviar_texto.php', { mensaje: `en cola ${Math.random()}` });
      expectOk(q);
      queued = q.body.msg_id;
      await until(async () => ((await s.core.store.getMensaje(queued))?.intentos ?? 0) >= 1, { what: 'a failed attempt' });
      const m = (await s.core.store.getMensaje(queued))!;
      expect(m.estado).toBe('pendiente');
      expect(m.error).toMatch(/\S/);
      // The direct send was refunded; the queued one stays charged while it waits.
      expect(await credit()).toBe(before - 1);
    } finally {
      await net.up(s);
    }
    clock().advance(11 * 60_000);
    await waitEstado(s, queued, 'enviado', 10_000);
  });

  it('line health: a linked session the gateway stopped is started again, and comes back without a scan', async () => {
    if (!net.stopSession) return;
    // A line never linked stays as it is: starting its session would only make QR codes nobody scans.
    const idle = await api(s.url, 'POST', '/api/celular_crear.php', { key: line.clientKey, json: { numero: numeroNuevo() } });
    expect(idle.status, idle.text).toBe(201);
    await s.health.checkNow();
    expect((await s.core.store.getCelular(idle.body.celular_id))!.last_status).toBe('disconnected');
    expect(s.health.restarted).toBe(0);
    await net.stopSession(instancia);
    await until(async () => (await s.core.store.getCelular(line.celularId))?.last_status === 'disconnected', { what: 'the stop reported' });
    expect((await s.core.store.getCelular(line.celularId))!.estado).toBe('desconectado');
    await s.health.checkNow();
    await until(async () => (await s.core.store.getCelular(line.celularId))?.estado === 'activo', { what: 'activo again' });
    expect(s.health.restarted).toBeGreaterThanOrEqual(1);
    expect((await s.core.store.getCelular(line.celularId))!.last_status).toBe('connected');
  });

  it('line health: a session that dies without telling is not shown connected after a check', async () => {
    if (!net.killSilently) return;
    await net.killSilently(instancia);
    await s.health.checkNow();
    const c = (await s.core.store.getCelular(line.celularId))!;
    expect(c.last_status).not.toBe('connected');
    expect(c.last_status_check).toBe(clock().now());
    await hooks.wait((h) => h.json?.evento === 'session.status' && h.json.data.status_anterior === 'connected', 5000, 'session.status off connected');
    const health = await api(s.url, 'GET', '/health');
    expect(health.body).toMatchObject({ gateway: net.name, gateway_alcanzable: true });
  });

  it('the phone removes the device: the line is desconectado and refuses sends', async () => {
    await net.phoneLogout(s, instancia);
    await until(async () => (await s.core.store.getCelular(line.celularId))?.estado === 'desconectado', { what: 'celular desconectado' });
    expectError(await post('/api/mensaje_enviar_texto.php', { mensaje: 'x', directo: 1 }), 403, 301);
  });

  it('deleting the celular removes its gateway instance', async () => {
    const r = await api(s.url, 'POST', `/api/celular_eliminar.php?id=${line.celularId}`, { key: line.clientKey });
    expectOk(r);
    expect(['logged_out', 'unknown']).toContain(await s.core.gateway.status(instancia));
  });
});
