import { randomUUID } from 'node:crypto';
import type { LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { requireActiveClient, requireClientKey, type ClientPrincipal } from '../core/auth/auth.js';
import { iso } from '../core/time/clock.js';
import type { Core } from '../core/context.js';
import { fail } from '../core/api/errors.js';
import { parseHttpUrl } from '../core/media/media-url.js';
import type { EscuchaRow } from '../core/ports/model.js';
import { parseEventos, vetWebhookHost } from './config.js';
import { generateSecret } from './sign.js';

/**
 * Webhook listeners (`webhook listen`, docs/decisions.md
 * D-45): temporary extra destinations of a client's events, each with
 * a secret of its own, alive while the listener renews its lease. The
 * client's configuration is never touched. Client key only, like the rest of
 * the webhook API.
 */

/** Live listeners a client may have at once. */
export const LISTENERS_MAX = 5;

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** 127.0.0.0/8 or ::1, also IPv4-mapped (::ffff:127.0.0.1); a name is never loopback here. */
export function isLoopbackAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  return family !== 0 && LOOPBACK.check(bare, family === 4 ? 'ipv4' : 'ipv6');
}

/** One address of X-Forwarded-For or of a Forwarded `for=`, without quotes, brackets or port. */
function hop(raw: string): string {
  const v = raw.trim().replace(/^"|"$/g, '');
  if (v.startsWith('[')) return v.slice(1, v.indexOf(']') > 0 ? v.indexOf(']') : undefined);
  // IPv4 with a port (one colon); an IPv6 address has several.
  return v.split(':').length === 2 ? v.slice(0, v.indexOf(':')) : v;
}

const list = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/**
 * Whether a request was made on this machine: its peer and every address a
 * proxy names in X-Forwarded-For or Forwarded are loopback. A proxy on this
 * machine makes the peer loopback for everyone, so the forwarded chain must
 * be loopback too (what a proxy adds, a remote client cannot remove). With
 * `serve --trust-proxy` the chain must also be there: a proxy is said to be
 * in front, and without its headers the real client is unknown.
 */
export function requestFromThisMachine(
  peer: string | undefined,
  headers: { 'x-forwarded-for'?: string | string[]; forwarded?: string | string[] },
  trustProxy = false,
): boolean {
  if (!peer || !isLoopbackAddress(peer)) return false;
  const chain = list(headers['x-forwarded-for']).flatMap((h) => h.split(','));
  for (const f of list(headers.forwarded).flatMap((h) => h.split(','))) {
    for (const pair of f.split(';')) {
      const [k, v] = pair.split('=');
      if (k?.trim().toLowerCase() === 'for' && v !== undefined) chain.push(v);
    }
  }
  if (trustProxy && chain.length === 0) return false;
  return chain.every((a) => isLoopbackAddress(hop(a)));
}

/** `serve --host` names a loopback interface only (127.0.0.0/8, ::1, localhost); 0.0.0.0 and :: are every interface. */
export function isLoopbackHost(host: string): boolean {
  return host.trim().toLowerCase() === 'localhost' || isLoopbackAddress(host.trim());
}

export function escuchaView(e: EscuchaRow, leaseMs: number) {
  return { id: e.id, url: e.url, eventos: e.eventos, created_at: iso(e.created_at), expira_at: iso(e.expira_at), vigencia_ms: leaseMs };
}

export interface ListenerInput {
  url?: unknown;
  eventos?: unknown;
}

/**
 * A listener's URL: a loopback address (127.0.0.0/8, [::1]) over http or
 * https, accepted with `serve --allow-private-urls`, or when the request
 * comes from this machine (where that address is the listener's) AND the
 * server listens on loopback only. A server on a public interface may sit
 * behind a same-host proxy that adds no forwarding headers (plain
 * proxy_pass, stunnel, ssh -L): every remote client would then look local.
 * Anything else over https only, under the real webhook's address rule.
 */
async function listenerUrl(core: Pick<Core, 'config'>, raw: unknown, local: boolean): Promise<URL> {
  if (typeof raw !== 'string' || raw.trim() === '') fail('INVALID_PARAMS', 'url is required (http://127.0.0.1:PORT/ from this machine, or https://)');
  let url: URL;
  try {
    url = parseHttpUrl(raw.trim(), 'url');
  } catch (err) {
    fail('INVALID_PARAMS', (err as Error).message);
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isLoopbackAddress(host)) {
    if (!core.config.allowPrivateUrls && !(local && isLoopbackHost(core.config.listenHost))) {
      fail(
        'INVALID_PARAMS',
        "url: a loopback listener is accepted only from a request made on the server's own machine to a server listening on loopback (serve --host 127.0.0.1), or with serve --allow-private-urls",
      );
    }
    return url;
  }
  if (host.toLowerCase() === 'localhost') fail('INVALID_PARAMS', 'url: give the loopback address itself (http://127.0.0.1:PORT/), not localhost');
  if (url.protocol !== 'https:') fail('INVALID_PARAMS', 'url: http:// is accepted for a loopback listener only; use https://');
  await vetWebhookHost(url, core.config.allowPrivateUrls);
  return url;
}

/** Registers a listener; its secret is in this answer only. */
export async function addListener(core: Pick<Core, 'store' | 'clock' | 'config'>, p: ClientPrincipal, input: ListenerInput, local: boolean) {
  requireClientKey(p, 'registering a webhook listener');
  requireActiveClient(p);
  const url = await listenerUrl(core, input.url, local);
  const eventos = parseEventos(input.eventos);
  const leaseMs = core.config.webhookListenLeaseMs;
  const now = core.clock.now();
  const e: EscuchaRow = {
    id: `esc_${randomUUID().replace(/-/g, '')}`,
    cliente_id: p.cliente.id,
    url: url.toString(),
    secret: generateSecret(),
    eventos,
    created_at: now,
    expira_at: now + leaseMs,
  };
  const r = await core.store.addEscucha(e, LISTENERS_MAX, now);
  if (r === 'limite') {
    fail(
      'LISTENER_CAP',
      `this client already has ${LISTENERS_MAX} live webhook listeners, the most allowed: stop one, or wait for an abandoned one to expire (${Math.ceil(leaseMs / 1000)} s after its last renewal)`,
    );
  }
  return { escucha: escuchaView(r, leaseMs), secret: r.secret };
}

const requireId = (id: string): void => {
  if (!id) fail('INVALID_PARAMS', "id is required (the listener's esc_... id)");
};

/** Extends a live listener's lease by the full lease from now. */
export async function renewListener(core: Pick<Core, 'store' | 'clock' | 'config'>, p: ClientPrincipal, id: string) {
  requireClientKey(p, 'renewing a webhook listener');
  requireId(id);
  const leaseMs = core.config.webhookListenLeaseMs;
  const now = core.clock.now();
  const r = await core.store.renewEscucha(p.cliente.id, id, now + leaseMs, now);
  if (!r) fail('LISTENER_NOT_FOUND', `no live webhook listener ${id} for this client (removed, or its lease expired): register it again`);
  return { escucha: escuchaView(r, leaseMs) };
}

export async function removeListener(core: Pick<Core, 'store' | 'clock'>, p: ClientPrincipal, id: string) {
  requireClientKey(p, 'removing a webhook listener');
  requireId(id);
  if (!(await core.store.deleteEscucha(p.cliente.id, id, core.clock.now()))) {
    fail('LISTENER_NOT_FOUND', `no live webhook listener ${id} for this client (already removed, or its lease expired)`);
  }
  return { id, eliminado: true };
}

export async function listListeners(core: Pick<Core, 'store' | 'clock' | 'config'>, p: ClientPrincipal) {
  requireClientKey(p, 'listing webhook listeners');
  const leaseMs = core.config.webhookListenLeaseMs;
  return { escuchas: (await core.store.liveEscuchas(p.cliente.id, core.clock.now())).map((e) => escuchaView(e, leaseMs)) };
}

/**
 * How a listener's host is checked before copies go to it: a loopback
 * address was accepted at registration under the rule above, anything else
 * is vetted as real webhook hosts are, again every few seconds.
 */
export function vetListenerHost(allowPrivate: boolean): (url: URL) => Promise<LookupAddress[]> {
  return async (url) => {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isLoopbackAddress(host)) return [{ address: host, family: isIP(host) }];
    return vetWebhookHost(url, allowPrivate);
  };
}
