import type { FastifyInstance } from 'fastify';
import type { PanelDeps } from '../index.js';

// Being built (issue 27): the vincular pages.
export default async function vincularPages(_app: FastifyInstance, _deps: PanelDeps) {}
