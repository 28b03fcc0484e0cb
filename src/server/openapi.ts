import { ManualClock } from '../core/time/clock.js';
import { MemoryCounters } from '../core/nodes/counters-memory.js';
import { ERRORS } from '../core/api/errors.js';
import { EventBus } from '../core/events/events.js';
import { SimGateway } from '../gateways/sim.js';
import { openSqliteStore } from '../store/sqlite/store.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from './app.js';
import { TempFiles } from '../core/media/media.js';
import { NodePresence } from '../core/nodes/node-presence.js';
import { LocalMedia } from '../store/sqlite/media.js';
import { WebhookDispatcher } from '../webhooks/dispatcher.js';
import { presenceSettings, SERVE_DEFAULTS, webhookSettings } from './config.js';
import { coreConfigOf, makeCore } from './make-core.js';

/**
 * The OpenAPI document as the running server would serve it, built from the
 * route schemas on a throwaway in-memory core. `npm run generate` commits it
 * as openapi.json; a test fails when the committed copy drifts.
 */
export async function openapiDocument(): Promise<Record<string, unknown>> {
  const store = openSqliteStore(':memory:');
  const clock = new ManualClock(0);
  const gateway = new SimGateway(store, clock, {
    qrRotateMs: SERVE_DEFAULTS.simQrMs,
    deliveryMs: SERVE_DEFAULTS.simDeliveryMs,
    readMs: SERVE_DEFAULTS.simReadMs,
  });
  const defaults = { ...SERVE_DEFAULTS, dataDir: '' };
  const core = makeCore(coreConfigOf(defaults, { adminToken: '', tz: 'UTC' }), {
    store,
    clock,
    counters: new MemoryCounters(clock),
    gateway,
    bus: new EventBus(),
  });
  // Handlers never run here; sends are only described.
  const tmp = new TempFiles(join(tmpdir(), 'pasarela-openapi'));
  const app = await buildApp({
    core,
    send: { tmp, media: new LocalMedia(tmp), queued: () => {}, inFlight: new Set(), keysAccepting: new Map() },
    webhooks: new WebhookDispatcher(core, new NodePresence(store, clock, { ...presenceSettings(defaults, core.config.queue.leaseMs), onError: () => {} }), {
      ...webhookSettings(defaults, ''),
      onError: () => {},
    }),
  });
  await app.ready();
  const doc: Record<string, unknown> = { ...app.swagger() };
  await app.close();
  await store.close();
  return doc;
}

/** The api_codigo table (docs/api-codigo.md), from the one error table. */
export function apiCodigoMarkdown(): string {
  const rows = [
    '| api_codigo | HTTP | api_texto | meaning |',
    '|---|---|---|---|',
    '| 0 | 200/201 | OK | success |',
    ...Object.values(ERRORS).map((e) => `| ${e.codigo} | ${e.status} | ${e.texto} | ${e.meaning.replace(/\|/g, '\\|')} |`),
  ];
  return `${rows.join('\n')}\n`;
}
