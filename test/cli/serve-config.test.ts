import { describe, expect, it } from 'vitest';
import type { Option } from 'commander';
import { buildProgram, main } from '../../src/cli/main.js';
import { fakeIO } from './helpers.js';
import { processIO } from '../../src/cli/io.js';
import { completeConfig, configOf, SERVE_DEFAULTS } from '../../src/server/config.js';
import { knobDefaults, SERVE_KNOBS } from '../../src/server/config-knobs.js';

/**
 * `serve`'s flags come from one table (src/server/config.ts). The command-line
 * contract (docs/design.md): every flag and variable name, and every
 * default, stays what it was; written out here, so a change of the table
 * that drops or renames one fails.
 */
const CONTRACT: Array<[flag: string, env: string | undefined, shown: unknown]> = [
  ['--host', 'PASARELA_HOST', '127.0.0.1'],
  ['--port', 'PASARELA_PORT', 8080],
  ['--public-url', 'PASARELA_PUBLIC_URL', undefined],
  ['--data-dir', 'PASARELA_DATA_DIR', undefined],
  ['--gateway', 'PASARELA_GATEWAY', 'sim'],
  ['--baileys-ws-url', 'PASARELA_BAILEYS_WS_URL', undefined],
  ['--node-url', 'PASARELA_NODE_URL', undefined],
  ['--engine-key-file', 'PASARELA_ENGINE_KEY_FILE', undefined],
  ['--gateway-url', 'PASARELA_GATEWAY_URL', undefined],
  ['--gateway-key', 'PASARELA_GATEWAY_KEY', undefined],
  ['--gateway-callback-url', 'PASARELA_GATEWAY_CALLBACK_URL', undefined],
  ['--gateway-timeout', 'PASARELA_GATEWAY_TIMEOUT', 15_000],
  ['--health-interval', 'PASARELA_HEALTH_INTERVAL', 60_000],
  ['--header-timeout', 'PASARELA_HEADER_TIMEOUT', 20_000],
  ['--body-timeout', 'PASARELA_BODY_TIMEOUT', 20_000],
  ['--body-min-rate', 'PASARELA_BODY_MIN_RATE', 500],
  ['--request-timeout', 'PASARELA_REQUEST_TIMEOUT', 600_000],
  ['--unauth-body-per-address', 'PASARELA_UNAUTH_BODY_PER_ADDRESS', 134_217_728],
  ['--unauth-body-total', 'PASARELA_UNAUTH_BODY_TOTAL', 536_870_912],
  ['--store', 'PASARELA_STORE', 'sqlite'],
  ['--counters', 'PASARELA_COUNTERS', 'memory'],
  ['--counters-prefix', 'PASARELA_COUNTERS_PREFIX', 'pasarela:'],
  ['--drain-delay', 'PASARELA_DRAIN_DELAY', 0],
  ['--stop-timeout', 'PASARELA_STOP_TIMEOUT', 10_000],
  ['--log-level', 'PASARELA_LOG_LEVEL', 'info'],
  ['--metrics-listen', 'PASARELA_METRICS_LISTEN', undefined],
  ['--log-format', 'PASARELA_LOG_FORMAT', undefined],
  ['--inbox-retention', 'PASARELA_INBOX_RETENTION', 90 * 86_400_000],
  ['--trust-proxy', undefined, undefined],
  ['--auth-max-failures', undefined, 20],
  ['--tz', 'PASARELA_TZ', undefined],
  ['--allow-private-urls', undefined, undefined],
  // Its variable reads yes/no itself (1/true/yes, 0/false/no), not through commander.
  ['--gateway-fetches-media', undefined, undefined],
  ['--queue-gap-ms', undefined, [1000, 5000]],
  ['--queue-ttl', undefined, 86_400_000],
  ['--queue-lease', undefined, undefined],
  ['--queue-max-pending', undefined, 10_000],
  ['--brake-min-messages', undefined, 20],
  ['--brake-failure-pct', undefined, 30],
  ['--brake-refused-pct', undefined, 10],
  ['--brake-undelivered-pct', undefined, 50],
  ['--webhook-retry-ms', undefined, 5000],
  ['--webhook-timeout', 'PASARELA_WEBHOOK_TIMEOUT', 10_000],
  ['--webhook-concurrency', 'PASARELA_WEBHOOK_CONCURRENCY', 64],
  ['--webhook-client-concurrency', 'PASARELA_WEBHOOK_CLIENT_CONCURRENCY', 16],
  ['--webhook-poll', 'PASARELA_WEBHOOK_POLL', 5000],
  ['--background', 'PASARELA_BACKGROUND', 'thread'],
  ['--sim-qr-ms', undefined, 20_000],
  ['--sim-delivery-ms', undefined, 1000],
  ['--sim-read-ms', undefined, 3000],
  ['--engine-settle', 'PASARELA_ENGINE_SETTLE', 30000],
];

const serveOptions = (): readonly Option[] => buildProgram(processIO(), {}).commands.find((c) => c.name() === 'serve')!.options;

describe("serve's flags, from the table", () => {
  it('every flag of the contract, with its variable and default, and no other', () => {
    expect(serveOptions().map((o) => [o.long, o.envVar, o.defaultValue])).toEqual(CONTRACT);
  });

  it('the variables that are no flag: the operator token, the gateway secret, and --gateway-fetches-media yes/no', () => {
    const envOnly = Object.values(SERVE_KNOBS)
      .filter((k) => k.env && (!k.flag || k.kind === 'switch'))
      .map((k) => k.env);
    expect(envOnly).toEqual(['PASARELA_GATEWAY_SECRET', 'PASARELA_ADMIN_TOKEN', 'PASARELA_GATEWAY_FETCHES_MEDIA']);
  });

  it('--help shows durations and sizes as written, not as numbers', () => {
    const shown = Object.fromEntries(serveOptions().map((o) => [o.long, o.defaultValueDescription]));
    expect(shown).toMatchObject({ '--gateway-timeout': '15s', '--queue-gap-ms': '1000-5000', '--unauth-body-total': '512 MiB', '--inbox-retention': '90d' });
  });
});

describe('the configuration object', () => {
  it("the table's defaults, grouped as the modules take them; a send timeout 4 times the gateway's", () => {
    const c = configOf(knobDefaults(), '/data');
    expect(c).toMatchObject({
      dataDir: '/data',
      gatewayTimeoutMs: 15_000,
      gatewaySendTimeoutMs: 60_000,
      background: 'thread',
      queue: { gapMinMs: 1000, gapMaxMs: 5000, ttlMs: 86_400_000, maxPending: 10_000, retryMs: 5000, recheckMs: 1000 },
      limits: { headerTimeoutMs: 20_000, bodyTimeoutMs: 20_000, bodyMinRate: 500, requestTimeoutMs: 600_000 },
    });
    expect(c.queue.leaseMs).toBeUndefined();
  });

  it('in-process servers: the same defaults, run inline', () => {
    const { background, ...rest } = SERVE_DEFAULTS;
    const { dataDir: _d, background: cli, ...same } = configOf(knobDefaults(), '/data');
    expect(background).toBe('inline');
    expect(cli).toBe('thread');
    expect(rest).toEqual(same);
  });

  it("completeConfig: what a test gives over the defaults, the queue's and the limits' fields one by one; undefined is not given", () => {
    const c = completeConfig({
      dataDir: '/d',
      gatewayTimeoutMs: 1000,
      queue: { gapMinMs: 0, gapMaxMs: 0 },
      limits: { headerTimeoutMs: 500 },
      healthIntervalMs: undefined,
    });
    expect(c.gatewaySendTimeoutMs).toBe(4000);
    expect(c.healthIntervalMs).toBe(60_000);
    expect(c.queue).toMatchObject({ gapMinMs: 0, gapMaxMs: 0, ttlMs: 86_400_000, retryMs: 5000 });
    expect(c.limits).toMatchObject({ headerTimeoutMs: 500, bodyTimeoutMs: 20_000 });
  });
});

describe('serve --public-url', () => {
  it('takes an http(s) URL, with a path prefix or not, its trailing slash dropped; anything else is a usage error naming the flag', async () => {
    expect(configOf({ ...knobDefaults(), publicUrl: 'https://api.example.com/pasarela/' }, '/d').publicUrl).toBe('https://api.example.com/pasarela');
    expect(configOf(knobDefaults(), '/d').publicUrl).toBeUndefined();
    for (const bad of ['api.example.com', 'ftp://api.example.com', 'https://', 'https://a b', 'https://api.example.com/?x=1']) {
      const fake = fakeIO();
      const code = await main(['serve', '--port', '0', '--data-dir', '/nonexistent/never-made', '--public-url', bad], fake.io, {});
      expect(code, bad).toBe(2);
      expect(fake.stderr(), bad).toMatch(/^error: --public-url: .* is not an http\(s\) URL/);
    }
  });
});
