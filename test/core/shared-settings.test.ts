import { describe, expect, it } from 'vitest';
import { countersSettings, settle, settleCounters, SharedSettingsConflict, type Given, type SharedSettings } from '../../src/core/nodes/shared-settings.js';

const first: SharedSettings = {
  adminToken: 'a'.repeat(64),
  gateway: 'evolution',
  gatewaySecret: 's'.repeat(64),
  callbackUrl: 'http://lb:8080',
  tz: 'America/Lima',
};
const nothingGiven: Given = { adminToken: false, gateway: true, gatewaySecret: false, callbackUrl: false, tz: false };

describe('shared settings (core/nodes/shared-settings.ts)', () => {
  it('a node given nothing takes every recorded value', () => {
    const mine = { ...first, adminToken: 'b'.repeat(64), gatewaySecret: 't'.repeat(64), callbackUrl: '', tz: 'UTC' };
    expect(settle(first, mine, nothingGiven)).toEqual(first);
  });

  it('a node given the same values starts with them', () => {
    expect(settle(first, first, { adminToken: true, gateway: true, gatewaySecret: true, callbackUrl: true, tz: true })).toEqual(first);
  });

  it('a node given a different value refuses, naming every setting that differs and no secret', () => {
    const mine = { ...first, adminToken: 'c'.repeat(64), tz: 'Europe/Madrid' };
    let err: unknown;
    try {
      settle(first, mine, { ...nothingGiven, adminToken: true, tz: true });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SharedSettingsConflict);
    const msg = (err as Error).message;
    expect(msg).toContain('the operator token (PASARELA_ADMIN_TOKEN)');
    expect(msg).toContain('the time zone (--tz)');
    expect(msg).not.toContain('c'.repeat(16));
    expect(msg).not.toContain('a'.repeat(16));
  });

  it('another gateway kind is always refused, defaulted or not', () => {
    expect(() => settle(first, { ...first, gateway: 'sim' }, nothingGiven)).toThrow(/the gateway \(--gateway\)/);
  });
});

describe('counters settings (core/nodes/shared-settings.ts)', () => {
  it('memory or a Redis database with its prefix; the Redis address is not part of it', () => {
    expect(countersSettings('memory', 'pasarela:')).toEqual({ counters: 'memory', prefix: '' });
    expect(countersSettings('redis://127.0.0.1:6379', 'a:')).toEqual({ counters: 'redis database 0', prefix: 'a:' });
    expect(countersSettings('redis://:pw@redis.internal:6380/5', 'a:')).toEqual(countersSettings('rediss://10.0.0.7/5', 'a:'));
  });

  it('the same settings start; a difference refuses, naming each setting with both values', () => {
    const cluster = countersSettings('redis://127.0.0.1:6379/5', 'nw:');
    expect(() => settleCounters(cluster, countersSettings('redis://localhost/5', 'nw:'))).not.toThrow();
    expect(() => settleCounters(cluster, countersSettings('redis://127.0.0.1:18098', 'pasarela:'))).toThrow(
      /--counters: memory, or which Redis database\): this node "redis database 0", the other nodes "redis database 5"; the counters key prefix \(--counters-prefix\): this node "pasarela:", the other nodes "nw:"/,
    );
    expect(() => settleCounters(cluster, countersSettings('memory', 'nw:'))).toThrow(SharedSettingsConflict);
  });
});
