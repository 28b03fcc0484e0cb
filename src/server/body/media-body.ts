import { Base64Decoder, normalizeMime } from '../../core/media/base64-stream.js';
import { diskFull, fail } from '../../core/api/errors.js';
import { newMsgId } from '../../core/sending/ids.js';
import { acceptSniffed, checkDeclaredMime, MEDIA_RULES, type MediaTipo, type TempFile, type TempFiles } from '../../core/media/media.js';
import { sniffFile } from '../../core/media/media-sniff-file.js';
import { tooLarge } from '../../core/media/media-size.js';
import type { MediaFile } from '../../core/sending/send.js';
import { fieldName, type FieldSink } from './fields.js';

/**
 * The fields of a body that carries one base64 file: the file's text is
 * decoded as it arrives (core/media/base64-stream.ts) into its temp file, the
 * other fields are kept. A credential met before the file is verified right
 * then, so an unauthenticated client cannot make the server write its file.
 */
export interface MediaBodySpec {
  /** Names the file may come under (once). */
  fileFields: readonly string[];
  /** The field with the declared MIME. */
  declaredField: string;
  /** The body field with a credential. */
  credentialField: string;
  /**
   * The message type for the declared MIME; undefined while it is unknown
   * (the legacy route derives the type from it), `atEnd` when the body is
   * complete (then it may refuse instead).
   */
  tipoFor(declared: string | undefined, atEnd: boolean): MediaTipo | undefined;
  /** An empty file field means "no file" (legacy: a text message) rather than empty base64. */
  emptyIsNoFile?: boolean;
}

/** Before the type is known (legacy, type field after the file): the largest limit, documento's. */
const UNKNOWN_TIPO: MediaTipo = 'documento';

export class MediaBody implements FieldSink {
  readonly fields: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  private fileField: string | undefined;
  private decoder: Base64Decoder | undefined;
  private decoded: { size: number; sha256: string; uriMime: string | undefined } | undefined;
  private readonly msgId = newMsgId();
  private file: TempFile | undefined;
  private pending: Buffer[] = [];
  private auth: Promise<void> | undefined;
  private fileText = false;
  private authTried = false;

  /**
   * @param repeated a repeated field: the last one wins (JSON.parse) or all are kept in an array (form parser)
   * @param verify verifies a credential met in the body before the file
   */
  constructor(
    private readonly spec: MediaBodySpec,
    private readonly tmp: TempFiles,
    private readonly repeated: 'last' | 'array',
    private readonly verify: (credential: string) => Promise<void>,
  ) {}

  streams(name: string): boolean {
    if (!this.spec.fileFields.includes(name)) return false;
    if (this.fileField !== undefined) {
      fail('INVALID_PARAMS', `send the file once: ${fieldName(this.fileField)} and ${name === this.fileField ? 'again' : fieldName(name)} both carry one`);
    }
    this.fileField = name;
    const declared = this.declared();
    const known = this.spec.tipoFor(declared, false);
    const tipo = known ?? UNKNOWN_TIPO;
    // A data URI of a type outside the list is refused before its data is read, when the type is known.
    const onUri = known ? (uri: string | undefined) => void checkDeclaredMime(known, normalizeMime(declared), uri) : undefined;
    this.decoder = new Base64Decoder(tipo, MEDIA_RULES[tipo].base64MaxBytes, onUri);
    return true;
  }

  piece(text: string): void {
    this.fileText ||= text !== '';
    const bytes = this.decoder!.write(text);
    if (bytes.length > 0) this.pending.push(bytes);
  }

  pieceEnd(): void {
    if (!this.fileText && this.spec.emptyIsNoFile) {
      this.fileField = undefined;
      return;
    }
    const { tail, ...result } = this.decoder!.end();
    if (tail.length > 0) this.pending.push(tail);
    this.decoded = result;
  }

  field(name: string, value: unknown): void {
    if (this.spec.fileFields.includes(name)) fail('INVALID_PARAMS', `${name} must be a string: base64 or a data URI`);
    const had = this.fields[name];
    const before: unknown[] = Array.isArray(had) ? had : [had];
    this.fields[name] = this.repeated === 'array' && had !== undefined ? [...before, value] : value;
    if (name === this.spec.credentialField && this.fileField === undefined && !this.authTried && typeof value === 'string') {
      this.authTried = true;
      this.auth = this.verify(value);
      // Awaited by the next flush; a refusal must not count as unhandled meanwhile.
      this.auth.catch(() => {});
    }
  }

  /** Waits for a credential check begun, and writes out the bytes decoded so far. */
  async flush(): Promise<void> {
    if (this.auth) {
      const auth = this.auth;
      this.auth = undefined;
      await auth;
    }
    if (this.pending.length === 0) return;
    try {
      this.file ??= await this.tmp.create(this.msgId);
      for (const b of this.pending) await this.file.write(b);
    } catch (err) {
      throw diskFull(err, `the temporary folder ${this.tmp.dir}`);
    }
    this.pending = [];
  }

  /** The body is complete: the file's final checks (size for its type, declared MIME, sniffed MIME). */
  async finish(): Promise<MediaFile | undefined> {
    await this.flush();
    if (this.fileField === undefined || !this.decoded || !this.file) return undefined;
    await this.file.close();
    const declaredRaw = this.declared();
    const tipo = this.spec.tipoFor(declaredRaw, true) ?? UNKNOWN_TIPO;
    const { size, sha256, uriMime } = this.decoded;
    const max = MEDIA_RULES[tipo].base64MaxBytes;
    if (size > max) tooLarge(tipo, size, max, 'file');
    const declared = checkDeclaredMime(tipo, normalizeMime(declaredRaw), uriMime);
    const mime = acceptSniffed(tipo, await sniffFile(this.file.path, { tipo, declared }), declared);
    return { msgId: this.msgId, path: this.file.path, bytes: size, mime, sha256 };
  }

  /** Removes whatever was written. */
  async discard(): Promise<void> {
    this.pending = [];
    await this.file?.discard();
  }

  private declared(): string | undefined {
    const v = this.fields[this.spec.declaredField];
    const last = Array.isArray(v) ? (v as unknown[]).at(-1) : v;
    return typeof last === 'string' ? last : undefined;
  }
}
