import { VERSION } from '../version.js';
import type { RunningServer } from './serve.js';

/** What `serve` prints once listening: where everything is, and a warning when the gateway is the simulator. */
export function banner(s: RunningServer, gateway: string, gatewayUrl?: string): string {
  const lines = [
    `pasarela ${VERSION} listening on ${s.url}`,
    `  data directory   ${s.dataDir}`,
    `  store            ${s.storeSource} (schema v${s.schemaVersion})`,
    `  gateway          ${gateway}${s.core.gateway.simulated ? ' (SIMULATED)' : ''}${gatewayUrl ? ` at ${withoutCredentials(gatewayUrl)}` : ''}`,
    `  time zone        ${s.core.config.tz} (the days of history and inbox filters, the lines' allowed hours)`,
    ...(s.callbackUrl ? [`  gateway events   ${s.callbackUrl}/gateway/${gateway}/<instance>`] : []),
    `  background       ${s.background === 'thread' ? 'queue, receipts and webhooks on a thread of their own' : 'queue, receipts and webhooks on the request thread'}`,
    `  counters         ${s.countersSource}${/unreachable/.test(s.core.counters.backend()) ? " - UNREACHABLE: counting in this process's memory until it answers" : ''}`,
    `  operator token   ${s.adminTokenSource}`,
    `  panel            ${s.url}/panel/ (sign in with the operator token, a client key or a celular key)`,
    `  metrics          ${s.url}/metrics (operator token)${s.metricsUrl ? `, ${s.metricsUrl} (no credentials)` : ''}`,
    `  API reference    ${s.url}/docs (the page), ${s.url}/openapi.json (OpenAPI 3)`,
  ];
  if (s.core.gateway.simulated) {
    lines.push(
      '',
      '  !!! SIMULATOR: the sim gateway is an in-process stand-in for the messaging network.',
      '  !!! Nothing is delivered to real phones. Link a line with `pasarela celular qr ID`',
      '  !!! and `pasarela sim scan ID`; start with --gateway NAME to reach a real gateway.',
    );
  }
  return lines.join('\n') + '\n';
}

/** A URL as the banner may show it: any user and password in it left out. */
function withoutCredentials(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.toString();
  } catch {
    return '(an invalid URL)';
  }
}
