import type { FastifyInstance } from 'fastify';
import type { PanelDeps } from '../index.js';

// Being built (issue 27): the servidores pages.
export default async function servidoresPages(_app: FastifyInstance, _deps: PanelDeps) {}
