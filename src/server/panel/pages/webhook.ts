import type { FastifyInstance } from 'fastify';
import type { PanelDeps } from '../index.js';

// Being built (issue 27): the webhook pages.
export default async function webhookPages(_app: FastifyInstance, _deps: PanelDeps) {}
