import { MEDIA_RULES, type TempFiles } from '../core/media/media.js';
import { tooLargeText } from '../core/media/media-size.js';
import { sniffFile } from '../core/media/media-sniff-file.js';
import { fetchUrl, UrlFetchFailure, type UrlProbeOptions } from '../core/media/media-url.js';
import { GatewayFailure, type OutboundMessage } from '../core/ports/gateway.js';

/**
 * Media URLs fetched by pasarela at send time, for gateways that would
 * otherwise fetch them later themselves, with their own DNS, from inside the
 * operator's network (where a rebinding DNS turns our private-address check
 * into a request to whatever the name points at then). The fetch goes over a
 * connection pinned to the address just vetted, within the type's size limit,
 * streamed to a temp file; the gateway gets the bytes, never the URL.
 */
export interface MediaFetchOptions {
  tmp: TempFiles;
  /** `serve --allow-private-urls`. */
  allowPrivate: boolean;
  /** For the whole fetch, DNS and body included. */
  timeoutMs: number;
  /** Tests only: which addresses count as private, and the DNS answer. */
  isBlocked?: UrlProbeOptions['isBlocked'];
  resolve?: UrlProbeOptions['resolve'];
}

const meaningful = (mime: string | null | undefined): string | undefined => (mime && mime !== 'application/octet-stream' ? mime : undefined);

export class MediaFetcher {
  constructor(private readonly opts: MediaFetchOptions) {}

  /**
   * Calls `send` with the message's media as a temp file instead of its URL
   * (a message without a URL goes as it is); the file is removed when `send`
   * ends, however it ends. A failed fetch is a GatewayFailure, named as such.
   */
  async withBytes<T>(msg: OutboundMessage, send: (m: OutboundMessage) => Promise<T>): Promise<T> {
    if (!msg.url || msg.tipo === 'texto') return send(msg);
    const tipo = msg.tipo;
    const max = MEDIA_RULES[tipo].urlMaxBytes;
    const file = await this.opts.tmp.scratch();
    try {
      let fetched;
      try {
        fetched = await fetchUrl(msg.url, {
          allowPrivate: this.opts.allowPrivate,
          timeoutMs: this.opts.timeoutMs,
          isBlocked: this.opts.isBlocked,
          resolve: this.opts.resolve,
          label: 'media URL',
          maxBytes: max,
          tooLarge: (bytes, declared) => tooLargeText(tipo, bytes, max, 'media URL file', !declared),
          write: (chunk) => file.write(chunk),
        });
      } catch (err) {
        if (err instanceof UrlFetchFailure) throw new GatewayFailure(err.message, err.kind);
        throw err;
      }
      await file.close();
      // The type the accept check reported, else what the bytes say, else what the server said.
      const mime = meaningful(msg.mime) ?? (await sniffFile(file.path, { tipo, declared: meaningful(fetched.mime) })) ?? meaningful(fetched.mime);
      const { url: _url, ...rest } = msg;
      return await send({ ...rest, filePath: file.path, mime });
    } finally {
      await file.discard();
    }
  }
}
