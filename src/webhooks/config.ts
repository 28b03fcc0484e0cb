import type { LookupAddress } from 'node:dns';
import { announceWebhookConfig } from './config-cache.js';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { requireActiveClient, requireClientKey, type ClientPrincipal } from '../core/auth/auth.js';
import { iso } from '../core/time/clock.js';
import type { Core } from '../core/context.js';
import { fail } from '../core/api/errors.js';
import { webhookAudit } from '../core/auth/audit.js';
import { isBlockedAddress, parseHttpUrl } from '../core/media/media-url.js';
import type { WebhookConfig } from '../core/ports/model.js';
import { checkWebhookSecret } from '../core/events/webhook-secret.js';

/** The webhook configuration of a client (docs/design.md §7). */
export const EVENT_KINDS = ['messages.received', 'message.status', 'session.status', 'celular.frenado', 'celular.reanudado'] as const;
export type EventKind = (typeof EVENT_KINDS)[number];
const ALL = 'all';

/**
 * Resolves a webhook host and checks every address is public (unless private
 * ones are allowed); the addresses are returned so the connection can be
 * pinned to them.
 */
export async function vetWebhookHost(url: URL, allowPrivate: boolean, opts: { unresolvedOk?: boolean } = {}): Promise<LookupAddress[]> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const family = isIP(host);
  const addresses: LookupAddress[] = family !== 0 ? [{ address: host, family }] : await lookup(host, { all: true }).catch(() => []);
  if (addresses.length === 0 && opts.unresolvedOk) return addresses;
  if (addresses.length === 0) fail('INVALID_PARAMS', `url: the host ${host} does not resolve`);
  if (!allowPrivate && addresses.some((a) => isBlockedAddress(a.address))) {
    fail('INVALID_PARAMS', 'url: points at a loopback, private or link-local address (allowed only with serve --allow-private-urls)');
  }
  return addresses;
}

/** `eventos` as a JSON array, repeated form fields, or a comma list; default all. */
export function parseEventos(raw: unknown): string[] {
  if (raw === undefined || raw === null || raw === '') return [ALL];
  if (Array.isArray(raw) && raw.length === 0) fail('INVALID_PARAMS', 'eventos: an empty list subscribes to nothing; leave it out for all');
  const list = (Array.isArray(raw) ? raw : [raw])
    .flatMap((v) => String(v).split(','))
    .map((v) => v.trim())
    .filter(Boolean);
  const bad = list.filter((v) => v !== ALL && !(EVENT_KINDS as readonly string[]).includes(v));
  if (bad.length > 0) fail('INVALID_PARAMS', `eventos: unknown ${bad.join(', ')}; use ${[...EVENT_KINDS, ALL].join(', ')}`);
  if (list.length === 0) return [ALL];
  return [...new Set(list.includes(ALL) ? [ALL] : list)];
}

/** Whether a configuration or a listener takes events of `kind`. */
export function subscribed(cfg: { eventos: string[] }, kind: string): boolean {
  return cfg.eventos.includes(ALL) || cfg.eventos.includes(kind);
}

export function webhookView(clienteId: number, cfg: WebhookConfig | null) {
  return {
    configurado: cfg !== null,
    cliente_id: clienteId,
    url: cfg?.url ?? '',
    has_secret: Boolean(cfg?.secret),
    eventos: cfg?.eventos ?? [],
    activo: cfg?.activo ?? false,
    updated_at: cfg ? iso(cfg.updated_at) : null,
  };
}

/** Client key only: the receiver URL often carries the receiver's own token. */
export async function getWebhook(core: Pick<Core, 'store'>, p: ClientPrincipal) {
  requireClientKey(p, 'reading the webhook configuration');
  return webhookView(p.cliente.id, await core.store.getWebhook(p.cliente.id));
}

export interface WebhookInput {
  url?: unknown;
  secret?: unknown;
  /** Keep the configured secret (the panel's default when editing); `secret` is then ignored. */
  keepSecret?: boolean;
  eventos?: unknown;
  activo?: boolean;
}

export async function setWebhook(core: Pick<Core, 'store' | 'clock' | 'config' | 'signals'>, p: ClientPrincipal, input: WebhookInput) {
  requireClientKey(p, 'configuring the webhook');
  requireActiveClient(p);
  if (typeof input.url !== 'string' || input.url.trim() === '') fail('INVALID_PARAMS', 'url is required (http:// or https://)');
  let url: URL;
  try {
    url = parseHttpUrl(input.url.trim(), 'url');
  } catch (err) {
    fail('INVALID_PARAMS', (err as Error).message);
  }
  // A name that does not resolve now (DNS not yet published, resolver down) is
  // saved with a warning, as Stripe saves any URL: every delivery resolves and
  // vets the host again, so nothing reaches a private address later either.
  const resolved = await vetWebhookHost(url, core.config.allowPrivateUrls, { unresolvedOk: true });
  let secret: string | null = null;
  if (input.keepSecret) secret = (await core.store.getWebhook(p.cliente.id))?.secret ?? null;
  else if (input.secret !== undefined && input.secret !== null && input.secret !== '') secret = checkWebhookSecret(input.secret);
  const cfg = await core.store.setWebhook(
    { cliente_id: p.cliente.id, url: url.toString(), secret, eventos: parseEventos(input.eventos), activo: input.activo ?? true },
    core.clock.now(),
    webhookAudit(p, 'webhook.configurar'),
  );
  await announceWebhookConfig(core.signals, p.cliente.id);
  const aviso = resolved.length === 0 ? `the host ${url.hostname} does not resolve now: deliveries fail and are retried until it does` : undefined;
  return { ...webhookView(p.cliente.id, cfg), ...(aviso ? { aviso } : {}) };
}

export async function deleteWebhook(core: Pick<Core, 'store' | 'clock' | 'signals'>, p: ClientPrincipal) {
  requireClientKey(p, 'removing the webhook');
  const eliminado = await core.store.deleteWebhook(p.cliente.id, core.clock.now(), webhookAudit(p, 'webhook.eliminar'));
  await announceWebhookConfig(core.signals, p.cliente.id);
  return { ...webhookView(p.cliente.id, null), eliminado };
}

export async function restoreWebhook(core: Pick<Core, 'store' | 'clock' | 'signals'>, p: ClientPrincipal) {
  requireClientKey(p, 'restoring the webhook');
  const r = await core.store.restoreWebhook(p.cliente.id, core.clock.now(), webhookAudit(p, 'webhook.restaurar'));
  await announceWebhookConfig(core.signals, p.cliente.id);
  if (r === 'nada') fail('CONFLICT', 'there is no earlier webhook configuration to restore');
  return webhookView(p.cliente.id, r);
}
