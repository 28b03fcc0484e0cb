import type { FastifyInstance } from 'fastify';
import type { PanelDeps } from '../index.js';

// Being built (issue 27): the recibidos pages.
export default async function recibidosPages(_app: FastifyInstance, _deps: PanelDeps) {}
