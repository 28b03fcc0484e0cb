import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { SseParser } from '../../src/cli/event-follow.js';
import type { IO } from '../../src/cli/io.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { admin, linkedLine, numeroNuevo, type Line } from '../server/send-helpers.js';
import { until } from '../helpers/poll.js';
import { Cli, fakeIO } from './helpers.js';

/**
 * `pasarela eventos` against a real server over a socket: NDJSON off a
 * terminal (each line the webhook body), readable lines on one, the filters,
 * --desde-id, the 410 of an id not kept, and --follow riding out a dropped
 * connection with Last-Event-ID (through a proxy the test cuts), then
 * ending on SIGINT with exit 0.
 */
let s: TestServer;
let cli: Cli;
let L: Line;
const env = () => ({ PASARELA_KEY: L.clientKey });

const receive = async (texto: string) => {
  const r = await admin(s, 'POST', '/admin/sim/receive', { celular_id: L.celularId, de: numeroNuevo(), texto });
  expect(r.status, r.text).toBe(200);
};
const lines = (out: string) =>
  out
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

beforeAll(async () => {
  s = await startTestServer({ streamTiming: { pollMs: 50 } });
  cli = new Cli(s.url);
  L = await linkedLine(s);
  for (const t of ['uno', 'dos', 'tres']) await receive(t);
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

describe('pasarela eventos', () => {
  it('without --follow: what the log holds, as NDJSON (each line the webhook body), exit 0; --eventos and --desde-id narrow it', async () => {
    const all = await cli.run(['eventos'], { env: env() });
    expect(all.exitCode, all.stderr).toBe(0);
    const evs = lines(all.stdout);
    expect(evs.every((e) => e.cliente_id === L.clienteId && /^evt_[0-9a-f]{32}$/.test(e.id))).toBe(true);
    const received = evs.filter((e) => e.evento === 'messages.received');
    expect(received.map((e) => e.data.texto)).toEqual(['uno', 'dos', 'tres']);
    const logged = await s.core.store.eventsAfter(L.clienteId, null, 100);
    expect(evs.map((e) => e.id)).toEqual(logged.map((e) => e.id));

    const only = await cli.run(['eventos', '--eventos', 'messages.received', '--desde-id', received[0].id, '--json'], { env: env() });
    expect(only.exitCode, only.stderr).toBe(0);
    expect(lines(only.stdout).map((e) => e.data.texto)).toEqual(['dos', 'tres']);
    const line = await cli.run(['eventos', '--celular', String(L.celularId), '--eventos', 'session.status'], { env: env() });
    expect(lines(line.stdout).every((e) => e.evento === 'session.status' && e.celular_id === L.celularId)).toBe(true);
  });

  it('refusals: an id not kept (exit 1, the server says why), an unknown kind (usage, exit 2), no key (exit 3)', async () => {
    const gone = await cli.run(['eventos', '--desde-id', `evt_${'0'.repeat(32)}`], { env: env() });
    expect(gone.exitCode).toBe(1);
    expect(gone.stderr).toMatch(/not in this client's log/);
    expect((await cli.run(['eventos', '--eventos', 'nada'], { env: env() })).exitCode).toBe(2);
    expect((await cli.run(['eventos'], { env: { PASARELA_KEY: undefined } })).exitCode).toBe(3);
  });

  it('on a terminal: one readable line per event', async () => {
    const fake = fakeIO();
    const io: IO = { ...fake.io, stdoutIsTTY: true };
    const code = await main(['eventos', '--eventos', 'messages.received'], io, cli.env(env()));
    expect(code).toBe(0);
    const out = fake.stdout().trim().split('\n');
    expect(out).toHaveLength(3);
    expect(out[0]).toMatch(new RegExp(`messages\\.received +celular ${L.celularId} +from \\d+: uno +evt_[0-9a-f]{32}$`));
  });

  it('--follow: live events, a dropped connection resumed after the last id (nothing lost, nothing twice), SIGINT ends it with exit 0', async () => {
    const proxy: TcpProxy = await startTcpProxy('127.0.0.1', Number(new URL(s.url).port));
    try {
      const fake = fakeIO();
      let signal: ((sig: NodeJS.Signals) => void) | undefined;
      const io: IO = { ...fake.io, onSignal: (h) => ((signal = h), () => (signal = undefined)) };
      const run = main(['eventos', '--follow', '--eventos', 'messages.received'], io, cli.env({ ...env(), PASARELA_URL: `http://127.0.0.1:${proxy.port}` }));
      await until(() => s.app.eventStreams.stats().some((x) => x.clienteId === L.clienteId), { what: 'the stream open' });
      await receive('cuatro');
      await until(() => fake.stdout().includes('cuatro'), { what: 'the live event' });
      await proxy.cut();
      await receive('cinco');
      await receive('seis');
      await proxy.restore();
      await until(() => fake.stdout().includes('seis'), { what: 'the events made while cut' });
      expect(fake.stderr()).toMatch(/connection lost/);
      expect(fake.stderr()).toMatch(/reconnected; resuming after evt_/);
      signal!('SIGINT');
      expect(await run).toBe(0);
      expect(lines(fake.stdout()).map((e) => e.data.texto)).toEqual(['cuatro', 'cinco', 'seis']);
    } finally {
      await proxy.close();
    }
  });

  it('the SSE parser: frames split anywhere, comments skipped, multi-line data joined', () => {
    const p = new SseParser();
    const text = ': ping\n\nretry: 2000\n\nid: a\nevent: x\ndata: {"n":1}\n\nid: b\nevent: y\ndata: l1\ndata: l2\n\n';
    const got = [];
    for (let i = 0; i < text.length; i += 7) got.push(...p.push(Buffer.from(text.slice(i, i + 7))));
    expect(got).toEqual([
      { id: 'a', evento: 'x', data: '{"n":1}' },
      { id: 'b', evento: 'y', data: 'l1\nl2' },
    ]);
  });
});
