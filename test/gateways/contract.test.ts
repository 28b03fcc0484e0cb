import { runGatewayContract } from './contract.js';
import { startSimHarness } from './sim-harness.js';
import { startEvolutionHarness } from './evolution-harness.js';
import { startWahaHarness } from './waha-harness.js';

runGatewayContract('sim', startSimHarness);
runGatewayContract('evolution', () => startEvolutionHarness());
runGatewayContract('waha', () => startWahaHarness());
runGatewayContract('waha-webjs', () => startWahaHarness({ engine: 'WEBJS' }));
