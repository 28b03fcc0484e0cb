import { describe, expect, it } from 'vitest';
import { settle, SharedSettingsConflict, type Given, type SharedSettings } from '../../src/core/shared-settings.js';

const first: SharedSettings = {
  adminToken: 'a'.repeat(64),
  gateway: 'evolution',
  gatewaySecret: 's'.repeat(64),
  callbackUrl: 'http://lb:8080',
  tz: 'America/Lima',
};
const nothingGiven: Given = { adminToken: false, gateway: true, gatewaySecret: false, callbackUrl: false, tz: false };

describe('shared settings (core/shared-settings.ts)', () => {
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
