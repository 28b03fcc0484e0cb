import type { AcceptedMedia } from '../ports/media.js';
import type { MensajePayload } from '../ports/model.js';
import type { Store } from '../ports/store.js';

/**
 * The rules around the AcceptedMedia port: a queued message's bytes are kept
 * where every node reads them before its row commits (core/sending/send.ts), the
 * sending node reads them through a local file, and the start-up sweep
 * spares what another node may still be accepting.
 */

/**
 * How long a sweep spares media no pending message names yet. An accept
 * keeps the bytes (after the body is in), then commits its row: seconds, far
 * within an hour, even for the largest file.
 */
export const ACCEPT_MARGIN_MS = 60 * 60 * 1000;

/** At start: removes the media of sends that ended while down, and what a crash left mid-accept. */
export async function sweepAcceptedMedia(store: Store, media: AcceptedMedia, now: number): Promise<number> {
  return media.sweep(await store.pendingFiles(), now - ACCEPT_MARGIN_MS);
}

/** Calls `send` with the payload's media as a local file, released however `send` ends. */
export async function withLocalMedia<T>(media: Pick<AcceptedMedia, 'open'>, payload: MensajePayload, send: (p: MensajePayload) => Promise<T>): Promise<T> {
  if (!payload.file) return send(payload);
  const local = await media.open(payload.file);
  try {
    return await send({ ...payload, file: local.path });
  } finally {
    await local.release();
  }
}
