import type { TempFiles } from '../../core/media/media.js';
import type { AcceptedMedia, LocalMediaFile } from '../../core/ports/media.js';

/**
 * Accepted media beside SQLite: the staged file in this node's tmp/ is where
 * the bytes stay (one process per data directory sends every message of it),
 * and its path is the reference.
 */
export class LocalMedia implements AcceptedMedia {
  constructor(private readonly tmp: TempFiles) {}

  async keep(_msgId: string, stagedPath: string): Promise<string> {
    return stagedPath;
  }

  async open(ref: string): Promise<LocalMediaFile> {
    return { path: ref, release: async () => {} };
  }

  remove(ref: string): Promise<void> {
    return this.tmp.remove(ref);
  }

  /** `before` does not apply: no other process writes this directory, and the sweep runs before this one accepts. */
  sweep(keep: Iterable<string>): Promise<number> {
    return this.tmp.sweep(keep);
  }
}
