import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import type { IO } from '../../src/cli/io.js';
import { eventBody } from '../../src/core/events/event-log.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { admin, linkedLine, numeroNuevo, type Line } from '../server/send-helpers.js';
import { until } from '../helpers/poll.js';
import { Cli, fakeIO } from './helpers.js';
import { expectSigned, type Hit } from './webhook-fixture.js';

/**
 * `webhook listen --stream`: no inbound connection to the CLI. It follows the
 * event stream and forwards each event to the local app with the body bytes,
 * headers and both signatures a delivery carries, signed with the app's own
 * secret (--secret), so the Standard Webhooks check passes unchanged.
 */
const APP_SECRET = 'el-secreto-de-mi-app-local-1234567';
let s: TestServer;
let cli: Cli;
let L: Line;
let app: Server;
let appUrl: string;
const hits: Hit[] = [];

beforeAll(async () => {
  s = await startTestServer({ streamTiming: { pollMs: 50 } });
  cli = new Cli(s.url);
  L = await linkedLine(s);
  app = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      hits.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}/hooks`;
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
  await new Promise((r) => app?.close(r));
});

it('forwards each event with the delivery body bytes, its headers and signatures made with --secret; Ctrl-C ends it (exit 0)', async () => {
  const fake = fakeIO();
  let signal: ((sig: NodeJS.Signals) => void) | undefined;
  const io: IO = { ...fake.io, onSignal: (h) => ((signal = h), () => (signal = undefined)) };
  const run = main(
    ['webhook', 'listen', '--secret', APP_SECRET, '--forward-to', appUrl, '--eventos', 'messages.received'],
    io,
    cli.env({ PASARELA_KEY: L.clientKey }),
  );
  await until(() => s.app.eventStreams.stats().some((x) => x.clienteId === L.clienteId), { what: 'the stream open' });
  for (const texto of ['hola', 'adiós']) {
    expect((await admin(s, 'POST', '/admin/sim/receive', { celular_id: L.celularId, de: numeroNuevo(), texto })).status).toBe(200);
  }
  await until(() => hits.length >= 2, { what: 'two forwarded events' });
  signal!('SIGINT');
  expect(await run).toBe(0);
  // The events as the log keeps them: the body a delivery would carry, byte for byte.
  const logged = (await s.core.store.eventsAfter(L.clienteId, null, 100)).filter((e) => e.evento === 'messages.received');
  expect(hits.map((h) => h.body)).toEqual(logged.map((e) => eventBody(e)));
  for (const h of hits) {
    expectSigned(h, APP_SECRET);
    expect(h.path).toBe('/hooks');
    expect(h.headers['x-service-event']).toBe('messages.received');
    expect(h.headers['content-type']).toBe('application/json');
  }
  expect(fake.stderr()).toMatch(/following the event stream .*no inbound connection/);
  // NDJSON off a terminal: each event, verified, with what the app answered.
  const lines = fake
    .stdout()
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  expect(lines.map((l) => [l.evento, l.body.data.texto, l.forward.status])).toEqual([
    ['messages.received', 'hola', 204],
    ['messages.received', 'adiós', 204],
  ]);
});

it('without --stream, against a server that will not deliver to this machine, it says so and follows the stream instead', async () => {
  // A server listening on every interface (not loopback) refuses a loopback listener URL without --allow-private-urls.
  const wide = await startTestServer({ host: '0.0.0.0', streamTiming: { pollMs: 50 } });
  const wideCli = new Cli(wide.url);
  try {
    const line = await linkedLine(wide);
    const before = hits.length;
    const fake = fakeIO();
    let signal: ((sig: NodeJS.Signals) => void) | undefined;
    const io: IO = { ...fake.io, onSignal: (h) => ((signal = h), () => (signal = undefined)) };
    const run = main(['webhook', 'listen', '--forward-to', appUrl, '--eventos', 'messages.received'], io, wideCli.env({ PASARELA_KEY: line.clientKey }));
    await until(() => wide.app.eventStreams.stats().some((x) => x.clienteId === line.clienteId), { what: 'the stream open' });
    expect((await admin(wide, 'POST', '/admin/sim/receive', { celular_id: line.celularId, de: numeroNuevo(), texto: 'de lejos' })).status).toBe(200);
    await until(() => hits.length > before, { what: 'the forwarded event' });
    signal!('SIGINT');
    expect(await run).toBe(0);
    expect(fake.stderr()).toMatch(/the server refused .* as a webhook listener.*following the event stream instead/);
    expect(JSON.parse(hits.at(-1)!.body).data.texto).toBe('de lejos');
  } finally {
    wideCli.cleanup();
    await wide.stop();
  }
});
