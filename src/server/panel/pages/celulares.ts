import type { FastifyInstance } from 'fastify';
import type { PanelDeps } from '../index.js';

// Being built (issue 27): the celulares pages.
export default async function celularesPages(_app: FastifyInstance, _deps: PanelDeps) {}
