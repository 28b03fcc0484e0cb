import { describe, expect, it } from 'vitest';
import { pickServer } from '../../src/core/accounts/gateway-servers.js';
import type { GatewayServerLoad } from '../../src/core/ports/gateway-servers.js';

/** The least-loaded rule that places a new line on a gateway server. */
const s = (id: number, lineas: number, max_lineas: number | null = null, over: Partial<GatewayServerLoad> = {}): GatewayServerLoad => ({
  id,
  nombre: `s${id}`,
  tipo: 'evolution',
  url: 'http://x',
  key: 'k',
  estado: 'activo',
  max_lineas,
  created_at: 0,
  updated_at: 0,
  lineas,
  ...over,
});

describe('pickServer', () => {
  it('takes the fewest lines when no server has a cap; ties go to the lowest id', () => {
    expect(pickServer([s(1, 3), s(2, 1), s(3, 1)], 'evolution')).toBe(2);
    expect(pickServer([s(1, 0), s(2, 0)], 'evolution')).toBe(1);
  });

  it('compares capped servers by lines per cap, and skips full ones', () => {
    // 40/100 < 10/20.
    expect(pickServer([s(1, 10, 20), s(2, 40, 100)], 'evolution')).toBe(2);
    expect(pickServer([s(1, 20, 20), s(2, 99, 100)], 'evolution')).toBe(2);
    expect(pickServer([s(1, 20, 20), s(2, 100, 100)], 'evolution')).toBeNull();
  });

  it('weighs a server without a cap like the largest cap among the candidates', () => {
    // Uncapped 30 of (as if) 100 against 10 of 20: 0.3 < 0.5.
    expect(pickServer([s(1, 10, 20), s(2, 30), s(3, 90, 100)], 'evolution')).toBe(2);
    expect(pickServer([s(1, 5, 20), s(2, 30), s(3, 90, 100)], 'evolution')).toBe(1);
  });

  it('never picks a draining server or one of another kind', () => {
    expect(pickServer([s(1, 0, null, { estado: 'drenando' }), s(2, 50)], 'evolution')).toBe(2);
    expect(pickServer([s(1, 0, null, { tipo: 'waha' }), s(2, 50)], 'evolution')).toBe(2);
    expect(pickServer([s(1, 0, null, { estado: 'drenando' })], 'evolution')).toBeNull();
    expect(pickServer([], 'evolution')).toBeNull();
  });
});
