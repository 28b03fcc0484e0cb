import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock, type ManualClock } from '../../src/core/time/clock.js';
import { PANEL_SESSION, sessionHolds } from '../../src/core/auth/panel-sessions.js';
import { pgSchema } from '../contract/adapters.js';
import { expectOk } from '../helpers/expect.js';
import { until } from '../helpers/poll.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';
import { openStream, type SseEvent, type SseStream } from './eventos-helpers.js';
import { admin, link, linkedLine, numeroNuevo, type Line } from './send-helpers.js';

/**
 * The event monitor's stream, `GET /panel/c/:cid/eventos/stream` (D-102),
 * over real HTTP with panel sessions: the signed-in principal's events only
 * (a client's, a line session's own line, the operator's for the client it
 * opens), the kind filter, resuming by Last-Event-ID, no stream without a
 * session, and the stream ended when its session ends (signed out, expired,
 * its key rotated). And the page: a filter the stream would refuse is
 * refused beside its field.
 */

let s: TestServer;
const open: SseStream[] = [];

beforeAll(async () => {
  s = await startTestServer({ streamTiming: { pollMs: 50, pingMs: 200 } });
});
afterAll(async () => {
  for (const st of open) st.close();
  await s?.stop();
});

const clock = () => s.clock as ManualClock;

/** A panel session's cookie, signed in through the sign-in form. */
async function session(srv: TestServer, credencial: string): Promise<string> {
  const r = await fetch(`${srv.url}/panel/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ credencial, next: '/panel/' }),
    redirect: 'manual',
  });
  expect(r.status).toBe(303);
  return `pasarela_panel=${/pasarela_panel=([^;]+)/.exec(r.headers.get('set-cookie') ?? '')![1]!}`;
}

async function stream(srv: TestServer, cookie: string | null, path: string, headers: Record<string, string> = {}): Promise<SseStream> {
  const st = await openStream(srv.url, path, null, { ...headers, ...(cookie ? { cookie } : {}) });
  open.push(st);
  return st;
}

/** An open stream: its first bytes arrived, so it starts after what was logged before. */
async function following(srv: TestServer, cookie: string, path: string, headers: Record<string, string> = {}): Promise<SseStream> {
  const st = await stream(srv, cookie, path, headers);
  expect(st.status).toBe(200);
  expect(st.headers['content-type']).toMatch(/^text\/event-stream/);
  return st;
}

const receive = (srv: TestServer, celularId: number, texto: string) =>
  admin(srv, 'POST', '/admin/sim/receive', { celular_id: celularId, de: numeroNuevo(), texto }).then((r) => expectOk(r));
const texts = (evs: SseEvent[]) => evs.map((e) => JSON.parse(e.data).data.texto as string);
const streamOf = (L: Line, query = '') => `/panel/c/${L.clienteId}/eventos/stream${query}`;

/** A second linked line of the same client. */
async function sibling(srv: TestServer, L: Line): Promise<Line> {
  const cel = await api(srv.url, 'POST', '/api/celular_crear.php', { key: L.clientKey, json: { numero: numeroNuevo() } });
  expect(cel.status, cel.text).toBe(201);
  const other: Line = {
    ...L,
    celularId: cel.body.celular_id,
    celularKey: cel.body.api_key,
    gatewayToken: cel.body.gateway_token,
    numero: cel.body.celular.numero,
  };
  await link(srv, other);
  return other;
}

describe("the monitor's stream carries the session's events only", () => {
  it("a client session: its own events, none of another client's; the operator's for the client it opens; the API's frames", async () => {
    const L = await linkedLine(s);
    const O = await linkedLine(s);
    const mine = await following(s, await session(s, L.clientKey), streamOf(L, '?eventos=messages.received'));
    const op = await following(s, await session(s, s.adminToken), streamOf(L, '?eventos=messages.received'));
    await receive(s, O.celularId, 'de otro cliente');
    await receive(s, L.celularId, 'uno');
    await receive(s, L.celularId, 'dos');
    const evs = await mine.waitEvents(2);
    expect(texts(evs)).toEqual(['uno', 'dos']);
    expect(texts(await op.waitEvents(2))).toEqual(['uno', 'dos']);
    // The API's stream's frames: id (the webhook id), event (the kind), data (the webhook body).
    for (const e of evs) expect(JSON.parse(e.data)).toMatchObject({ id: e.id, evento: e.event, cliente_id: L.clienteId, celular_id: L.celularId });
    // Nothing of the other client arrived after them (its event was logged first: had it been sent, it would lead).
    await receive(s, L.celularId, 'tres');
    expect(texts(await mine.waitEvents(3))).toEqual(['uno', 'dos', 'tres']);
    expect(mine.events.every((e) => JSON.parse(e.data).cliente_id === L.clienteId)).toBe(true);
  });

  it("a line session: its own line's events only; a sibling line 403, another client's page 404, before any stream", async () => {
    const L = await linkedLine(s);
    const M = await sibling(s, L);
    const O = await linkedLine(s);
    const cookie = await session(s, L.celularKey);
    const st = await following(s, cookie, streamOf(L, '?eventos=messages.received'));
    await receive(s, M.celularId, 'hermana');
    await receive(s, L.celularId, 'propia');
    await receive(s, L.celularId, 'propia 2');
    expect(texts(await st.waitEvents(2))).toEqual(['propia', 'propia 2']);

    const sib = await stream(s, cookie, streamOf(L, `?celular_id=${M.celularId}`));
    expect(sib.status).toBe(403);
    expect(sib.headers['content-type']).toMatch(/^text\/html/);
    const other = await stream(s, cookie, `/panel/c/${O.clienteId}/eventos/stream`);
    expect(other.status).toBe(404);
    // A client session narrows to one line with celular_id; another client's line is 404.
    const client = await session(s, L.clientKey);
    const one = await following(s, client, streamOf(L, `?celular_id=${M.celularId}&eventos=messages.received`));
    await receive(s, L.celularId, 'no esta');
    await receive(s, M.celularId, 'esta');
    expect(texts(await one.waitEvents(1))).toEqual(['esta']);
    expect((await stream(s, client, streamOf(L, `?celular_id=${O.celularId}`))).status).toBe(404);
  });

  it('without a session: no stream, the sign-in page', async () => {
    const L = await linkedLine(s);
    for (const cookie of [null, 'pasarela_panel=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA']) {
      const r = await fetch(`${s.url}${streamOf(L)}`, { headers: cookie ? { cookie } : {}, redirect: 'manual' });
      expect(r.status).toBe(303);
      expect(r.headers.get('location')).toMatch(/^\/panel\/login/);
      expect(r.headers.get('content-type') ?? '').not.toMatch(/event-stream/);
    }
    // A key as a bearer header is the API's, not the panel's: still no stream here.
    const bearer = await fetch(`${s.url}${streamOf(L)}`, { headers: { authorization: `Bearer ${L.clientKey}` }, redirect: 'manual' });
    expect(bearer.status).toBe(303);
  });
});

describe('filters and resuming', () => {
  it('the kind filter: only the kinds asked for; an unknown kind is 400 before any stream', async () => {
    const L = await linkedLine(s);
    const cookie = await session(s, L.clientKey);
    const st = await following(s, cookie, streamOf(L, '?eventos=messages.received'));
    const all = await following(s, cookie, streamOf(L));
    await api(s.url, 'POST', '/api/webhook_test.php', { key: L.clientKey });
    await receive(s, L.celularId, 'solo esto');
    expect(texts(await st.waitEvents(1))).toEqual(['solo esto']);
    await until(() => all.events.some((e) => e.event === 'messages.received'), { what: 'the unfiltered stream' });
    expect(st.events.map((e) => e.event)).toEqual(['messages.received']);
    const bad = await stream(s, cookie, streamOf(L, '?eventos=message.status,nope'));
    expect(bad.status).toBe(400);
    // The page says it beside the kinds, with the API's code.
    const page = await fetch(`${s.url}/panel/c/${L.clienteId}/eventos?eventos=nope`, { headers: { cookie } });
    expect(page.status).toBe(400);
    const text = await page.text();
    expect(text).toMatch(/id="f-eventos-error"[^>]*>[^<]*eventos: unknown kind nope/);
    expect(text).not.toContain('data-monitor ');
  });

  it('resumes after Last-Event-ID (and desde_id); an id not kept is 410', async () => {
    const L = await linkedLine(s);
    const cookie = await session(s, L.clientKey);
    const st = await following(s, cookie, streamOf(L, '?eventos=messages.received'));
    for (const t of ['a', 'b', 'c']) await receive(s, L.celularId, t);
    const evs = await st.waitEvents(3);
    st.close();
    const again = await following(s, cookie, streamOf(L, '?eventos=messages.received'), { 'last-event-id': evs[0]!.id });
    expect(texts(await again.waitEvents(2))).toEqual(['b', 'c']);
    const byQuery = await following(s, cookie, streamOf(L, `?eventos=messages.received&desde_id=${evs[1]!.id}`));
    expect(texts(await byQuery.waitEvents(1))).toEqual(['c']);
    const gone = await stream(s, cookie, streamOf(L), { 'last-event-id': `evt_${'0'.repeat(32)}` });
    expect(gone.status).toBe(410);
  });

  it('the page: a line of another client beside its field (404); a celular session has no line field', async () => {
    const L = await linkedLine(s);
    const O = await linkedLine(s);
    const client = await session(s, L.clientKey);
    const r = await fetch(`${s.url}/panel/c/${L.clienteId}/eventos?celular_id=${O.celularId}`, { headers: { cookie: client } });
    expect(r.status).toBe(404);
    expect(await r.text()).toMatch(/id="f-celular_id-error"/);
    const ok = await fetch(`${s.url}/panel/c/${L.clienteId}/eventos?eventos=message.status&eventos=session.status&celular_id=${L.celularId}`, {
      headers: { cookie: client },
    });
    expect(ok.status).toBe(200);
    const page = await ok.text();
    // The checkboxes' values go to the stream as the API's comma list.
    // The stream starts after the newest event the page showed (desde_id), when there is one.
    expect(page).toMatch(
      new RegExp(
        `data-stream="/panel/c/${L.clienteId}/eventos/stream\\?eventos=message\\.status%2Csession\\.status&amp;celular_id=${L.celularId}(&amp;desde_id=[^"]+)?"`,
      ),
    );
    const line = await (await fetch(`${s.url}/panel/c/${L.clienteId}/eventos`, { headers: { cookie: await session(s, L.celularKey) } })).text();
    expect(line).not.toContain('id="f-celular_id"');
    expect(line).toContain(`Events of line ${L.celularId}`);
  });
});

describe('the stream ends with its session', () => {
  it('signing out ends it', async () => {
    const L = await linkedLine(s);
    const cookie = await session(s, L.clientKey);
    const st = await following(s, cookie, streamOf(L));
    const page = await (await fetch(`${s.url}/panel/c/${L.clienteId}/eventos`, { headers: { cookie } })).text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
    const out = await fetch(`${s.url}/panel/logout`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrf }),
      redirect: 'manual',
    });
    expect(out.status).toBe(303);
    expect(await st.ended).toBe('end');
  });

  it('its key rotated ends it', async () => {
    const L = await linkedLine(s);
    const st = await following(s, await session(s, L.celularKey), streamOf(L));
    expectOk(await admin(s, 'POST', `/admin/celulares/${L.celularId}/rotar-key`));
    expect(await st.ended).toBe('end');
  });

  it('an idle session expires under an open stream: the stream does not keep it alive, and ends', async () => {
    const L = await linkedLine(s);
    const cookie = await session(s, L.clientKey);
    const st = await following(s, cookie, streamOf(L, '?eventos=messages.received'));
    const id = cookie.slice('pasarela_panel='.length);
    // Almost the idle deadline: still open, events still flow, and the stream's look at the session does not move it.
    clock().advance(PANEL_SESSION.idleMs - 60_000);
    await receive(s, L.celularId, 'aún');
    await st.waitEvents(1);
    expect(st.isEnded()).toBe(false);
    expect(await sessionHolds(s.core, id)).toBe(true);
    clock().advance(120_000);
    expect(await sessionHolds(s.core, id)).toBe(false);
    expect(await st.ended).toBe('end');
    // And the browser's reconnect finds no session.
    const again = await fetch(`${s.url}${streamOf(L)}`, { headers: { cookie }, redirect: 'manual' });
    expect(again.status).toBe(303);
  });
});

describeWith(postgres, 'on PostgreSQL', () => {
  let p: TestServer | undefined;
  let drop: (() => Promise<void>) | undefined;
  afterAll(async () => {
    await p?.stop();
    await drop?.();
  });

  it("a line session's monitor stream carries its events, and ends when its key is rotated (PostgreSQL)", async () => {
    const schema = await pgSchema();
    drop = schema.drop;
    p = await startTestServer({ store: schemaUrl(schema.schema), clock: systemClock, streamTiming: { pollMs: 100 } });
    const L = await linkedLine(p);
    const cookie = await session(p, L.celularKey);
    const st = await following(p, cookie, streamOf(L, '?eventos=messages.received'));
    await receive(p, L.celularId, 'pg uno');
    // Followers read below the cluster's xmin (D-69): another suite's open transaction on the shared database may hold the row back a while.
    expect(texts(await st.waitEvents(1, 60_000))).toEqual(['pg uno']);
    expectOk(await admin(p, 'POST', `/admin/celulares/${L.celularId}/rotar-key`));
    expect(await st.ended).toBe('end');
  }, 120_000);
});
