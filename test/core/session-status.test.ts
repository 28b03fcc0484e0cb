import { describe, expect, it } from 'vitest';
import { reconcileStatus } from '../../src/core/accounts/session-sync.js';

describe('reconcileStatus: a session event against what the gateway answers right after', () => {
  it("keeps the event's status when both say the same state, its reason being the more precise", () => {
    expect(reconcileStatus('need_scan', 'connecting')).toBe('need_scan');
    expect(reconcileStatus('disconnected', 'logged_out')).toBe('disconnected');
    expect(reconcileStatus('logged_out', 'disconnected')).toBe('logged_out');
    expect(reconcileStatus('connected', 'connected')).toBe('connected');
    expect(reconcileStatus('connecting', 'unknown')).toBe('connecting');
  });
  it("takes the gateway's answer when the event is overtaken (a late connecting or QR after open, an open after a logout)", () => {
    expect(reconcileStatus('connecting', 'connected')).toBe('connected');
    expect(reconcileStatus('need_scan', 'connected')).toBe('connected');
    expect(reconcileStatus('connected', 'logged_out')).toBe('logged_out');
    expect(reconcileStatus('connected', 'connecting')).toBe('connecting');
  });
});
