import type { FastifyInstance } from 'fastify';
import type { PanelDeps } from '../index.js';

// Being built (issue 27): the historial pages.
export default async function historialPages(_app: FastifyInstance, _deps: PanelDeps) {}
