import type { FastifyInstance } from 'fastify';
import type { PanelDeps } from '../index.js';

// Being built (issue 27): the clientes pages.
export default async function clientesPages(_app: FastifyInstance, _deps: PanelDeps) {}
