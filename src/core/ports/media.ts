/**
 * Where the bytes of accepted base64 media live from the accept until the
 * send ends (core/media/accepted-media.ts holds the rules): this node's tmp/
 * directory beside SQLite (src/store/sqlite/media.ts), chunks in the
 * database on PostgreSQL, where any node may send a queued message
 * (src/store/postgres/media.ts). Uploads are first staged in tmp/ (decoded and
 * sniffed there); a reference names the bytes in a message row.
 */
export interface AcceptedMedia {
  /**
   * Makes a staged upload readable by whichever node sends its message and
   * returns the reference for the row. Resolves once the bytes are durable;
   * the staged file is the adapter's from the call on (kept or moved).
   */
  keep(msgId: string, stagedPath: string, now: number): Promise<string>;
  /**
   * The bytes of `ref` as a local file for a gateway, until `release`. When
   * they are gone the path names no file, as a lost temp file would.
   */
  open(ref: string): Promise<LocalMediaFile>;
  /** Removes the bytes of `ref` (or a staged file); nothing when already gone. */
  remove(ref: string): Promise<void>;
  /**
   * Removes everything no reference in `keep` names, except, where other
   * nodes write, what was kept at or after `before` (an accept may be in
   * flight there: its bytes are kept before its row commits). Returns how many.
   */
  sweep(keep: Iterable<string>, before: number): Promise<number>;
}

export interface LocalMediaFile {
  path: string;
  /** Drops the local copy, if one was made for the send. */
  release(): Promise<void>;
}
