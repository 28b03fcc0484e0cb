import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { Agent, request, type Dispatcher } from 'undici';
import { AppError, fail } from '../api/errors.js';
import { FIELD_LIMITS } from '../api/limits.js';
import { toText } from '../api/to-text.js';

/**
 * Vetting a URL the service will hand to a gateway (media) or call itself
 * (webhooks): http(s) only, never a loopback/private/link-local target unless
 * allowed, and reachable. Redirects are followed by hand so every hop is vetted,
 * and each connection goes to the address that was vetted (no DNS rebinding
 * between the check and the connect).
 */

export const MAX_URL_LENGTH = FIELD_LIMITS.url;
export const MAX_REDIRECTS = 3;
export const DEFAULT_URL_TIMEOUT_MS = 5000;

const V4_BLOCKED: Array<[string, number]> = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local (cloud metadata lives here)
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
];

const V6_BLOCKED: Array<[string, number]> = [
  ['::', 96], // unspecified, loopback, IPv4-compatible
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard-only
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // old site-local
  ['ff00::', 8], // multicast
];

function buildBlockList(): BlockList {
  const list = new BlockList();
  for (const [net, prefix] of V4_BLOCKED) {
    // BlockList also matches the IPv4-mapped form (::ffff:a.b.c.d) of IPv4 rules.
    list.addSubnet(net, prefix, 'ipv4');
    // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address inside.
    const [a = 0, b = 0, c = 0, d = 0] = net.split('.').map(Number);
    const hi = ((a << 8) | b).toString(16);
    const lo = ((c << 8) | d).toString(16);
    list.addSubnet(`64:ff9b::${hi}:${lo}`, 96 + prefix, 'ipv6');
    list.addSubnet(`2002:${hi}:${lo}::`, 16 + prefix, 'ipv6');
  }
  for (const [net, prefix] of V6_BLOCKED) list.addSubnet(net, prefix, 'ipv6');
  return list;
}

const BLOCKED = buildBlockList();

/** True for loopback, private, link-local, CGNAT, multicast, reserved addresses and their IPv6-embedded forms. */
export function isBlockedAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 0) return true;
  return BLOCKED.check(bare, family === 4 ? 'ipv4' : 'ipv6');
}

export interface UrlProbeOptions {
  /** Loopback/private targets are allowed (tests, closed networks). */
  allowPrivate: boolean;
  /** For the whole check, every hop and DNS included. Default 5000. */
  timeoutMs?: number;
  /** What the messages call the URL ("media URL", "webhook URL"). */
  label?: string;
  /** Which addresses count as private; default isBlockedAddress (tests swap it to make loopback look public). */
  isBlocked?: (address: string) => boolean;
  /** The DNS answer for a host name; default the system resolver (tests answer what a rebinding DNS would). */
  resolve?: (host: string) => Promise<LookupAddress[]>;
}

export interface UrlProbeResult {
  /** The URL after redirects (each hop vetted), normalised. */
  url: string;
  /** Declared size, or null when the server does not say. */
  bytes: number | null;
  /** Content-Type without parameters, lower case, or null. */
  mime: string | null;
}

/** Parses and checks scheme and length; no network. */
export function parseHttpUrl(input: string, label = 'URL'): URL {
  if (input.length > MAX_URL_LENGTH) fail('MEDIA_URL_INVALID', `${label} is longer than ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    fail('MEDIA_URL_INVALID', `${label} is not a valid URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    fail('MEDIA_URL_INVALID', `${label} must be http or https, not ${url.protocol.replace(/:$/, '')}`);
  }
  if (url.hostname === '') fail('MEDIA_URL_INVALID', `${label} has no host`);
  return url;
}

const hostOf = (url: URL): string => url.hostname.replace(/^\[|\]$/g, '').toLowerCase();

class Timeout extends Error {}

/** Why `signal` aborted, as an Error (its reason is one unless someone aborted with something else). */
const abortReason = (signal: AbortSignal): Error => (signal.reason instanceof Error ? signal.reason : new Error(toText(signal.reason)));

/** Waits for `p` no longer than `signal` lets it: rejects with the abort's reason once it aborts. */
export function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    p.finally(() => signal.removeEventListener('abort', onAbort)).then(resolve, reject);
  });
}

/** A lookup for the connection that answers only with the addresses already vetted for that host. */
function pinnedLookup(pins: Map<string, LookupAddress[]>): LookupFunction {
  return (hostname, options, callback) => {
    const addresses = pins.get(hostname.replace(/^\[|\]$/g, '').toLowerCase());
    if (!addresses || addresses.length === 0) {
      const err: NodeJS.ErrnoException = new Error(`no vetted address for ${hostname}`);
      err.code = 'ENOTFOUND';
      callback(err, '', 0);
      return;
    }
    const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
    const list = wanted.length > 0 ? wanted : addresses;
    if (options.all) callback(null, list);
    else callback(null, list[0]!.address, list[0]!.family);
  };
}

/** An undici Agent whose connections to `host` go only to `addresses`, already vetted (no second DNS answer). */
export function pinnedAgent(host: string, addresses: LookupAddress[]): Agent {
  return new Agent({ connect: { lookup: pinnedLookup(new Map([[host.replace(/^\[|\]$/g, '').toLowerCase(), addresses]])) } });
}

const seconds = (ms: number): string => `${Number((ms / 1000).toFixed(1))} s`;

function header(res: Dispatcher.ResponseData, name: string): string | null {
  const v = res.headers[name];
  if (v === undefined) return null;
  return Array.isArray(v) ? (v[0] ?? null) : v;
}

function contentLength(res: Dispatcher.ResponseData): number | null {
  const v = header(res, 'content-length');
  if (v === null || !/^\s*\d+\s*$/.test(v)) return null;
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : null;
}

/** The complete length from `Content-Range: bytes 0-0/12345` (or `bytes * /12345` on 416). */
function rangeTotal(res: Dispatcher.ResponseData): number | null {
  const m = /^\s*bytes\s+(?:\d+-\d+|\*)\/(\d+)\s*$/i.exec(header(res, 'content-range') ?? '');
  if (!m) return null;
  const n = Number(m[1]);
  return Number.isSafeInteger(n) ? n : null;
}

function mimeOf(res: Dispatcher.ResponseData): string | null {
  const v = header(res, 'content-type');
  const m = v?.split(';')[0]?.trim().toLowerCase();
  return m ? m : null;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

function networkReason(err: unknown, signal: AbortSignal, timeoutMs: number): string {
  if (signal.aborted) return `timeout after ${seconds(timeoutMs)}`;
  const code = (err as { code?: unknown } | null)?.code;
  switch (code) {
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NODATA':
    case 'EAI_NONAME':
      return 'host not found';
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
    case 'UND_ERR_CLOSED':
      return 'connection closed by the server';
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'ETIMEDOUT':
      return `timeout after ${seconds(timeoutMs)}`;
    default:
      break;
  }
  if (typeof code === 'string' && /CERT|TLS|SSL/i.test(code)) return `TLS certificate error (${code})`;
  if (typeof code === 'string') return `network error (${code})`;
  return 'network error';
}

/**
 * One check or fetch: its deadline, and an agent whose connections go only to
 * addresses vetted in this session (each hop's host is vetted before its request).
 */
function urlSession(opts: UrlProbeOptions) {
  const label = opts.label ?? 'URL';
  const timeoutMs = opts.timeoutMs ?? DEFAULT_URL_TIMEOUT_MS;
  const isBlocked = opts.isBlocked ?? isBlockedAddress;
  const resolve = opts.resolve ?? ((host: string) => dnsLookup(host, { all: true }));
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Timeout()), timeoutMs);
  const pins = new Map<string, LookupAddress[]>();
  const agent = new Agent({ connect: { lookup: pinnedLookup(pins) } });
  const signal = controller.signal;
  return {
    label,
    timeoutMs,
    signal,
    /** Literal private IPs are refused before any DNS or connection. */
    refuseLiteral(url: URL): void {
      if (!opts.allowPrivate && isIP(hostOf(url)) !== 0 && isBlocked(hostOf(url))) {
        fail('MEDIA_URL_INVALID', `${label} points at a private address (${hostOf(url)})`);
      }
    },
    async vet(target: URL, what: string): Promise<void> {
      const host = hostOf(target);
      const family = isIP(host);
      let addresses: LookupAddress[];
      if (family !== 0) addresses = [{ address: host, family }];
      else {
        addresses = await abortable(resolve(host), signal);
        if (addresses.length === 0) fail('MEDIA_URL_INVALID', `${what} is not reachable (host not found)`);
      }
      if (!opts.allowPrivate) {
        const bad = addresses.find((a) => isBlocked(a.address));
        if (bad) fail('MEDIA_URL_INVALID', `${what} points at a private address (${bad.address})`);
      }
      pins.set(host, addresses);
    },
    send(target: URL, method: 'HEAD' | 'GET', headers: Record<string, string> = {}): Promise<Dispatcher.ResponseData> {
      return request(target, {
        method,
        dispatcher: agent,
        signal,
        headers: { 'user-agent': 'pasarela-url-check', accept: '*/*', 'accept-encoding': 'identity', ...headers },
      });
    },
    /** The next hop of a redirect answer, vetted for scheme; counts hops. */
    redirect(res: Dispatcher.ResponseData, from: URL, what: string, hops: number): URL {
      const location = header(res, 'location');
      if (location === null) fail('MEDIA_URL_INVALID', `${what} is not reachable (HTTP ${res.statusCode} without Location)`);
      if (hops > MAX_REDIRECTS) fail('MEDIA_URL_INVALID', `${label} is not reachable (more than ${MAX_REDIRECTS} redirects)`);
      let next: string;
      try {
        next = new URL(location, from).href;
      } catch {
        fail('MEDIA_URL_INVALID', `${what} redirects to an invalid URL`);
      }
      return parseHttpUrl(next, `${label} (redirect ${hops})`);
    },
    async close(): Promise<void> {
      clearTimeout(timer);
      await agent.destroy().catch(() => {});
    },
  };
}

const hopName = (label: string, hops: number): string => (hops === 0 ? label : `${label} (after ${hops} redirect${hops === 1 ? '' : 's'})`);

const discard = (res: Dispatcher.ResponseData): void => {
  res.body.on('error', () => {});
  res.body.destroy();
};

/**
 * Vets a URL and asks its server about it: HEAD, then a one-byte ranged GET
 * when HEAD is refused or gives no size. Throws MEDIA_URL_INVALID; never reads
 * a body.
 */
export async function probeUrl(input: string, opts: UrlProbeOptions): Promise<UrlProbeResult> {
  const session = urlSession(opts);
  const { label } = session;
  let url = parseHttpUrl(input, label);
  session.refuseLiteral(url);
  try {
    let hops = 0;
    for (;;) {
      // The host is named: a client reading "not reachable" sees which server was tried (after redirects, the last).
      const what = hopName(`${label} at ${url.host}`, hops);
      await session.vet(url, what);
      let res = await session.send(url, 'HEAD');
      discard(res);
      let status = res.statusCode;
      const headMime = status >= 200 && status < 300 ? mimeOf(res) : null;
      let bytes = status === 200 ? contentLength(res) : null;
      if (!REDIRECTS.has(status) && (status !== 200 || bytes === null)) {
        // HEAD refused (405/501, or a URL signed for GET only) or silent about the size.
        res = await session.send(url, 'GET', { range: 'bytes=0-0' });
        discard(res);
        status = res.statusCode;
        if (status === 206 || status === 416) bytes = rangeTotal(res);
        else if (status === 200) bytes = contentLength(res);
        // A 416 that states the total is an empty resource: reachable, 0 bytes.
        if (status === 416 && bytes !== null) status = 206;
      }
      if (REDIRECTS.has(status)) {
        hops += 1;
        url = session.redirect(res, url, what, hops);
        continue;
      }
      if (status < 200 || status >= 300) fail('MEDIA_URL_INVALID', `${what} is not reachable (HTTP ${status})`);
      return { url: url.href, bytes, mime: mimeOf(res) ?? headMime };
    }
  } catch (err) {
    if (err instanceof AppError) throw err;
    fail('MEDIA_URL_INVALID', `${label} at ${url.host} is not reachable (${networkReason(err, session.signal, session.timeoutMs)})`);
  } finally {
    await session.close();
  }
}

/** Why a fetch failed, and whether trying again later can help. */
export class UrlFetchFailure extends Error {
  constructor(
    message: string,
    readonly kind: 'permanent' | 'transient',
  ) {
    super(message);
    this.name = 'UrlFetchFailure';
  }
}

export interface UrlFetchOptions extends UrlProbeOptions {
  /** More than this many bytes (declared or received) fails the fetch. */
  maxBytes: number;
  /** What "too large" says, given the size (a lower bound when the server did not declare it). */
  tooLarge: (bytes: number, declared: boolean) => string;
  /** Takes each piece of the body as it arrives; the fetch waits for it (back-pressure). */
  write: (chunk: Buffer) => Promise<void>;
}

export interface UrlFetchResult {
  /** The URL after redirects. */
  url: string;
  bytes: number;
  /** Content-Type without parameters, lower case, or null. */
  mime: string | null;
}

/**
 * Vets a URL exactly as probeUrl does (every hop, connections pinned to the
 * vetted addresses) and streams its body to `write`, never holding more than a
 * piece of it and stopping past `maxBytes`. Throws UrlFetchFailure: permanent
 * when the same fetch would fail again (refused address, 4xx, too large),
 * transient otherwise (timeouts, 5xx, 408/429, network errors).
 */
export async function fetchUrl(input: string, opts: UrlFetchOptions): Promise<UrlFetchResult> {
  const session = urlSession(opts);
  const { label } = session;
  try {
    let url = parseHttpUrl(input, label);
    session.refuseLiteral(url);
    let hops = 0;
    for (;;) {
      const what = hopName(label, hops);
      await session.vet(url, what);
      const res = await session.send(url, 'GET');
      const status = res.statusCode;
      if (REDIRECTS.has(status)) {
        discard(res);
        hops += 1;
        url = session.redirect(res, url, what, hops);
        continue;
      }
      if (status !== 200) {
        discard(res);
        const again = status >= 500 || status === 408 || status === 429;
        throw new UrlFetchFailure(`${what} could not be fetched (HTTP ${status})`, again ? 'transient' : 'permanent');
      }
      const declared = contentLength(res);
      if (declared !== null && declared > opts.maxBytes) {
        discard(res);
        throw new UrlFetchFailure(opts.tooLarge(declared, true), 'permanent');
      }
      let bytes = 0;
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        bytes += chunk.length;
        if (bytes > opts.maxBytes) {
          discard(res);
          throw new UrlFetchFailure(opts.tooLarge(bytes, false), 'permanent');
        }
        await opts.write(chunk);
      }
      if (bytes === 0) throw new UrlFetchFailure(`${what} gave an empty file`, 'permanent');
      return { url: url.href, bytes, mime: mimeOf(res) };
    }
  } catch (err) {
    if (err instanceof UrlFetchFailure) throw err;
    // Refused addresses, schemes and redirects: the same URL fails the same way.
    if (err instanceof AppError) throw new UrlFetchFailure(err.message, 'permanent');
    const reason = networkReason(err, session.signal, session.timeoutMs);
    throw new UrlFetchFailure(`${label} could not be fetched (${reason})`, reason.startsWith('TLS') ? 'permanent' : 'transient');
  } finally {
    await session.close();
  }
}
