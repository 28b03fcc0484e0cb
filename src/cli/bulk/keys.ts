/**
 * The Idempotency-Key of one row: the file's SHA-256 and the row's number.
 * The same file sends each row under the same key on every run, so a rerun
 * (after a crash, Ctrl-C or a 402) replays the rows the server took and sends
 * only the rest; a changed file is a new campaign. The server keeps keys 24 h.
 */
export function rowKey(fileSha256: string, row: number): string {
  return `bulk-${fileSha256.slice(0, 40)}-${row}`;
}
