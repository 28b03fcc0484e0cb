import type { FastifyInstance } from 'fastify';
import type { PanelDeps } from '../index.js';

// Being built (issue 27): the auditoria pages.
export default async function auditoriaPages(_app: FastifyInstance, _deps: PanelDeps) {}
