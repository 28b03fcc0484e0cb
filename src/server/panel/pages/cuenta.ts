import type { FastifyInstance } from 'fastify';
import type { PanelDeps } from '../index.js';

// Being built (issue 27): the cuenta pages.
export default async function cuentaPages(_app: FastifyInstance, _deps: PanelDeps) {}
