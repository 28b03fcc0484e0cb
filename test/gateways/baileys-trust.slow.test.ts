import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/time/clock.js';
import { GatewayFailure } from '../../src/core/ports/gateway.js';
import { BaileysGateway } from '../../src/gateways/baileys/adapter.js';
import { fileAuthSource } from '../helpers/engine-file-auth.js';
import { startFakeNetwork, type FakeNetwork } from '../fakewa/index.js';
import { tempDir } from '../helpers/server.js';

/**
 * The library defect at the handshake (DESIGN §13): a server whose
 * certificate root the engine does not trust is refused, although its chain
 * is well formed and every signature is 64 bytes (rc14 accepted it). This
 * file never trusts the fake's root: each test file loads its own baileys.
 */
describe("a network whose certificate root is not the network's", () => {
  let fake: FakeNetwork;
  const dir = tempDir('pasarela-engine-trust-');
  let gw: BaileysGateway;

  beforeAll(async () => {
    fake = await startFakeNetwork();
    gw = new BaileysGateway({ auth: fileAuthSource(dir), clock: systemClock, wsUrl: fake.wsUrl, ca: fake.ca, timeoutMs: 8_000, sendTimeoutMs: 8_000 });
    await gw.start();
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is refused at the handshake: no QR is ever shown', async () => {
    const err = await gw.connect('pasarela-1', '5215550001111').then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(GatewayFailure);
    expect((err as GatewayFailure).kind).toBe('transient');
    expect(await gw.status('pasarela-1')).not.toBe('need_scan');
  });
});
