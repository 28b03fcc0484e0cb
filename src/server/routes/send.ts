import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { normalizeMime } from '../../core/media/base64-stream.js';
import type { Core } from '../../core/context.js';
import { fail } from '../../core/api/errors.js';
import { IDEM_KEY, idemKeyOf } from '../../core/sending/idempotency.js';
import { MEDIA_RULES } from '../../core/media/media.js';
import type { Tipo } from '../../core/ports/model.js';
import { send, type MediaTipo, type SendAnswer, type SendDeps, type SendRequest, type SendResult } from '../../core/sending/send.js';
import { streamMediaBodies, takeUpload, type MediaBodyRoute } from '../body/media-parser.js';
import { authenticateOnce, bodyOf, boolish, clientAuth, clientAuthBeforeBody, principal, success, verifyBodyKey } from '../http.js';
import { aliasSchema, errorResponses, keyField, okResponse } from '../schemas/common.js';
import { Flag, Type, type TProperties } from '../schemas/typed.js';
import { FIELD_LIMITS, FILENAME_PATTERN, VIGENCIA_S } from '../../core/api/limits.js';
import { API, type ApiPath } from '../../core/api/api-routes.js';

/**
 * The eleven send endpoints and the legacy one (docs/design.md §5). Each only maps its
 * fields onto one SendRequest; every rule lives in core/sending/send.ts. Bodies with
 * a base64 file are read as a stream (body/media-parser.ts): the file is
 * decoded into its temp file as it arrives and reaches send() as that file.
 */

const destinatario = Type.String({
  minLength: 1,
  maxLength: FIELD_LIMITS.destinatario,
  description: "country code first; +, spaces and a bare national number of the line's country are accepted",
});
const idempotencyKey = Type.Optional(
  Type.String({ ...IDEM_KEY, description: 'the Idempotency-Key header, for clients that cannot set headers (both given must agree)' }),
);
/** A scheduled send's instant (core/sending/schedule.ts checks it, so a bad one is refused with its reason). */
function enviarEn() {
  return Type.String({
    maxLength: 64,
    description:
      'RFC 3339 instant to send a queued message at, at most 30 days ahead (2026-12-01T09:30:00-03:00); in the past or now: as soon as ' +
      'possible. The message stays pendiente until then, charged now; caps and allowed hours apply when it is due. Not with directo=1',
  });
}
const common = {
  key: Type.Optional(keyField),
  destinatario,
  directo: Type.Optional(Flag('1: send now (answer after the gateway); 0 or absent: queue')),
  celular_id: Type.Optional(Type.Integer({ minimum: 1, description: 'line to send from, with a client key' })),
  grupo: Type.Optional(
    Type.String({ minLength: 1, maxLength: 256, description: 'with a client key, instead of celular_id: the pool whose line sends it (docs/pools.md)' }),
  ),
  idempotency_key: idempotencyKey,
  vigencia: Type.Optional(
    Type.Union(
      [
        Type.Integer({ minimum: VIGENCIA_S.min, maximum: VIGENCIA_S.max }),
        Type.String({ minLength: 1, maxLength: 64, description: 'or an RFC 3339 instant, 10 s to 24 h after the send starts' }),
      ],
      {
        description:
          'seconds a queued send may wait to be handed to the gateway, or the instant it must be handed over by; past it, it ends in error with ' +
          'error_clase caducado and is refunded (docs/validity.md). Ignored with directo=1',
      },
    ),
  ),
  enviar_en: Type.Optional(enviarEn()),
};

/** The Idempotency-Key header, for every send endpoint (core/sending/idempotency.ts). */
const idemHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      ...IDEM_KEY,
      description:
        'Names this send for 24 h, per client. A repeat of the same request gets the first answer again (same status and body, header ' +
        'Idempotent-Replayed: true) and sends, counts and charges nothing; the key with a different request answers 409 api_codigo 607; ' +
        'a repeat while the first is still being sent answers 409 api_codigo 608 with retry_after. Refusals before acceptance keep nothing; ' +
        'a direct send that provably never went out (rate-limited, gateway unreachable) frees the key.',
    }),
  ),
});
const caption = Type.Optional(Type.String({ maxLength: FIELD_LIMITS.caption }));
const filename = Type.String({
  minLength: 1,
  maxLength: FIELD_LIMITS.filename,
  pattern: FILENAME_PATTERN,
  description: 'with extension',
});
const url = Type.String({ minLength: 1, maxLength: FIELD_LIMITS.url, description: 'http(s) URL of the media' });
const mime = Type.Optional(Type.String({ maxLength: FIELD_LIMITS.mime }));
const mensaje = Type.String({ minLength: 1, maxLength: FIELD_LIMITS.mensaje });

/** Set on an answer given again for a repeated Idempotency-Key (of any status). */
const replayedHeader = {
  'Idempotent-Replayed': {
    type: 'string',
    enum: ['true'],
    description: 'present, "true", when this is the first answer given again for a repeated Idempotency-Key',
  },
} as const;

const result = okResponse({
  msg_id: { type: 'string', format: 'uuid' },
  modo: { type: 'string', enum: ['cola', 'directo'] },
  estado: { type: 'string' },
  gateway_msg_id: { type: 'string' },
  origen: { type: 'string', enum: ['base64_directo', 'base64_inline'] },
  anti_dupe: { type: 'object', properties: { count: { type: 'integer' }, max: { type: 'integer' }, window_s: { type: 'integer' } } },
  envio_desde: {
    type: 'string',
    format: 'date-time',
    description: "a queued send accepted while the line's allowed hours are closed: when they open (it waits until then)",
  },
  enviar_en: { type: 'string', format: 'date-time', description: 'a scheduled send: when it is due (it stays pendiente until then)' },
  celular_id: { type: 'integer', description: 'a send to a pool (grupo): the line it picked' },
});
const sent = { ...result, headers: replayedHeader };

/** The refusals particular to sends, documented by status (their bodies are the common error's). */
const idemResponses = {
  409: {
    description:
      'api_codigo 607 IDEMPOTENCIA_CONFLICTO: the Idempotency-Key was used for a different request; 608 IDEMPOTENCIA_EN_CURSO: a request with this key is still being processed (retry_after)',
    $ref: 'Error#',
  },
  502: {
    description:
      'api_codigo 704 DESTINATARIO_RECHAZADO: a direct send the gateway refused for good (refunded); sending it again will fail again. 700 ERROR_DE_GATEWAY: nothing was sent (refunded), it may succeed later. 705 RESULTADO_INCIERTO: the outcome is unknown (refunded); a repeat under the same key replays it',
    headers: replayedHeader,
    $ref: 'Error#',
  },
} as const;

const MB = 1024 * 1024;
const mb = (n: number) => `${Math.round((n / MB) * 10) / 10} MB`;

/** Room for the base64 text of the largest allowed file, percent-encoded in a form, plus the other fields. */
const base64BodyLimit = (maxBytes: number) => Math.ceil((maxBytes * 4) / 3) * 3 + 256 * 1024;

interface RouteSpec {
  path: string;
  /** enviarTexto, enviarImagen, enviarImagenBase64, ... */
  operationId: string;
  tipo: Tipo;
  summary: string;
  /** The route's own fields beside `common`; those not wrapped in Type.Optional are required. */
  body: TProperties;
  /** Per-type name of the base64 field (the generic `data_base64` is accepted too). */
  base64Field?: string;
  bodyLimit?: number;
}

const NAMES: Record<MediaTipo, string> = { imagen: 'image', documento: 'document', audio: 'audio', video: 'video', sticker: 'sticker' };

function routes(): RouteSpec[] {
  const out: RouteSpec[] = [
    {
      path: API.mensajeTexto,
      operationId: 'enviarTexto',
      tipo: 'texto',
      summary: 'Send a text message',
      body: { mensaje, preview_url: Type.Optional(Flag('show a link preview')) },
    },
  ];
  const ptt = Type.Optional(Flag('send as a voice note'));
  const extra: Record<MediaTipo, TProperties> = {
    imagen: { caption },
    documento: { filename: Type.Optional(filename), caption },
    audio: { ptt, caption },
    video: { caption },
    sticker: {},
  };
  const paths: Record<MediaTipo, [ApiPath, ApiPath]> = {
    imagen: [API.mensajeImagen, API.mensajeImagenBase64],
    documento: [API.mensajeDocumento, API.mensajeDocumentoBase64],
    audio: [API.mensajeAudio, API.mensajeAudioBase64],
    video: [API.mensajeVideo, API.mensajeVideoBase64],
    sticker: [API.mensajeSticker, API.mensajeStickerBase64],
  };
  for (const tipo of Object.keys(extra) as MediaTipo[]) {
    const rule = MEDIA_RULES[tipo];
    const operationId = `enviar${tipo[0]!.toUpperCase()}${tipo.slice(1)}`;
    out.push({
      path: paths[tipo][0],
      operationId,
      tipo,
      summary: `Send ${tipo === 'imagen' ? 'an image' : `a ${NAMES[tipo]}`} by URL (declared size up to ${mb(rule.urlMaxBytes)})`,
      body: { url, ...extra[tipo] },
    });
    const field = `${NAMES[tipo]}Base64`;
    out.push({
      path: paths[tipo][1],
      operationId: `${operationId}Base64`,
      tipo,
      summary: `Send ${tipo === 'imagen' ? 'an image' : `a ${NAMES[tipo]}`} as base64 (up to ${mb(rule.base64MaxBytes)}; MIME ${rule.mimes.join(', ')})`,
      body: {
        [field]: Type.Optional(Type.String({ description: 'data URI or raw base64' })),
        data_base64: Type.Optional(Type.String({ description: `generic name for ${field}` })),
        mime,
        filename: tipo === 'documento' ? filename : Type.Optional(Type.String({ maxLength: FIELD_LIMITS.filename, description: 'for logs only' })),
        ...(tipo === 'sticker' ? {} : { caption }),
        ...(tipo === 'audio' ? { ptt } : {}),
      },
      base64Field: field,
      bodyLimit: base64BodyLimit(rule.base64MaxBytes),
    });
  }
  return out;
}

function str(b: Record<string, unknown>, k: string): string | undefined {
  const v = b[k];
  return typeof v === 'string' ? v : undefined;
}

/** Where a send's answer goes: a repeated key's answer keeps its status and says it is one. */
function answer(reply: FastifyReply, a: SendAnswer) {
  reply.code(a.status);
  if (a.replayed) reply.header('Idempotent-Replayed', 'true');
  if (typeof a.body.retry_after === 'number') reply.header('Retry-After', String(a.body.retry_after));
  return a.body;
}

/** The request's Idempotency-Key, header or field, and the endpoint it names a send of. */
function idemOf(req: FastifyRequest, endpoint: string): SendRequest['idem'] {
  const clave = idemKeyOf(req.headers['idempotency-key'], bodyOf(req).idempotency_key);
  return clave === undefined ? undefined : { clave, endpoint };
}

function present(r: SendResult, tipo: Tipo, base64: boolean) {
  return success(
    {
      msg_id: r.msg_id,
      modo: r.modo,
      estado: r.estado,
      anti_dupe: r.anti_dupe,
      ...(r.gateway_msg_id ? { gateway_msg_id: r.gateway_msg_id } : {}),
      ...(r.envio_desde && r.modo === 'cola' ? { envio_desde: r.envio_desde } : {}),
      ...(r.enviar_en ? { enviar_en: r.enviar_en } : {}),
      ...(r.celular_id !== undefined ? { celular_id: r.celular_id } : {}),
      ...(tipo === 'imagen' && base64 ? { origen: r.modo === 'directo' ? 'base64_directo' : 'base64_inline' } : {}),
    },
    { descripcion: r.modo === 'directo' ? 'mensaje enviado' : 'mensaje en cola', saldo: r.saldo },
  );
}

/** A body's `vigencia` as the schema let it through (seconds, or an instant core reads). */
const vigenciaOf = (b: Record<string, unknown>): { vigencia?: number | string } =>
  typeof b.vigencia === 'number' || typeof b.vigencia === 'string' ? { vigencia: b.vigencia } : {};

/** The legacy route's type for its `tipomime`; `documento` for anything not image, audio or video. */
function legacyTipo(tipomime: string | undefined): MediaTipo | undefined {
  const t = normalizeMime(tipomime);
  if (!t) return undefined;
  return t.startsWith('image/') ? 'imagen' : t.startsWith('audio/') ? 'audio' : t.startsWith('video/') ? 'video' : 'documento';
}

export default async function sendRoutes(
  app: FastifyInstance,
  { core, deps }: { core: Pick<Core, 'store' | 'counters' | 'gateway' | 'clock' | 'bus' | 'config' | 'credentials' | 'lines'>; deps: SendDeps },
) {
  const auth = clientAuth(core);
  const handler = (spec: RouteSpec) => async (req: FastifyRequest, reply: FastifyReply) => {
    const b = bodyOf(req);
    const idem = idemOf(req, spec.path);
    const req0: SendRequest = {
      tipo: spec.tipo,
      destinatario: String(b.destinatario),
      directo: boolish(b.directo, 'directo'),
      celular_id: typeof b.celular_id === 'number' ? b.celular_id : undefined,
      ...(typeof b.grupo === 'string' ? { grupo: b.grupo } : {}),
      texto: str(b, 'mensaje'),
      preview_url: boolish(b.preview_url, 'preview_url'),
      // A base64 route sends the given bytes only, whatever else the body carries.
      url: spec.base64Field ? undefined : str(b, 'url'),
      caption: str(b, 'caption'),
      filename: str(b, 'filename'),
      ptt: boolish(b.ptt, 'ptt'),
      mime: str(b, 'mime'),
      ...vigenciaOf(b),
      ...(idem ? { idem } : {}),
      ...(str(b, 'enviar_en') !== undefined ? { enviar_en: str(b, 'enviar_en') } : {}),
    };
    if (spec.base64Field) {
      req0.file = takeUpload(req);
      if (req0.file === undefined) fail('INVALID_PARAMS', `${spec.base64Field} (or data_base64) is required`);
    }
    const base64 = Boolean(spec.base64Field);
    return answer(reply, await send(core, deps, principal(req), req0, (r) => present(r, spec.tipo, base64)));
  };
  const schemaOf = (spec: RouteSpec) => ({
    operationId: spec.operationId,
    tags: ['envios'],
    summary: spec.summary,
    security: [{ bearer: [] }],
    headers: idemHeaders,
    body: Type.Object({ ...common, ...spec.body }),
    response: { 200: sent, ...idemResponses, ...errorResponses },
  });
  const specs = routes();
  for (const spec of specs.filter((x) => !x.base64Field)) {
    app.post(spec.path, { preValidation: auth, schema: schemaOf(spec), handler: handler(spec) });
  }

  // Base64 bodies: a header key is verified before the body; the body is streamed.
  await app.register(async (scope) => {
    streamMediaBodies(scope, deps.tmp);
    const early = clientAuthBeforeBody(core);
    for (const spec of specs.filter((x) => x.base64Field)) {
      const mediaBody: MediaBodyRoute = {
        fileFields: [spec.base64Field!, 'data_base64'],
        declaredField: 'mime',
        credentialField: 'key',
        tipoFor: () => spec.tipo as MediaTipo,
        authenticate: (req, key) => verifyBodyKey(core, req, key),
      };
      scope.post(spec.path, {
        onRequest: early,
        preValidation: auth,
        bodyLimit: spec.bodyLimit,
        config: { mediaBody },
        schema: schemaOf(spec),
        handler: handler(spec),
      });
    }

    // The legacy endpoint: the token in the body, text or text with one base64 file (`mime`) of type `tipomime`.
    const legacyAuth = async (req: FastifyRequest, token: string | undefined) => {
      const p = await authenticateOnce(core, req, [token]);
      if (p.kind !== 'celular') fail('FORBIDDEN', "the legacy endpoint takes a celular's gateway or legacy token, not a client key");
      req.principal = p;
    };
    const legacyBody: MediaBodyRoute = {
      fileFields: ['mime'],
      declaredField: 'tipomime',
      credentialField: 'token',
      emptyIsNoFile: true,
      tipoFor: (tipomime, atEnd) => {
        const tipo = legacyTipo(tipomime);
        if (!tipo && atEnd) fail('INVALID_PARAMS', 'tipomime is required when mime (the file) is present');
        return tipo;
      },
      authenticate: legacyAuth,
    };
    const legacySchema = {
      operationId: 'enviarLegacy',
      tags: ['envios'],
      summary: 'Legacy send: token in the body; text, or text with a base64 file (`mime`) of type `tipomime`',
      body: Type.Object({
        token: Type.String({ description: 'gateway token (64 hex) or legacy token of the celular' }),
        destinatario,
        mensaje,
        mime: Type.Optional(Type.String({ description: 'the file content in base64 (the field is called mime)' })),
        tipomime: Type.Optional(Type.String({ maxLength: FIELD_LIMITS.mime, description: 'MIME type of the file; required with mime' })),
        modo: Type.Optional(Type.String({ description: 'directo or DIRECTO for an immediate send; absent: queue' })),
        idempotency_key: idempotencyKey,
        vigencia: common.vigencia,
        enviar_en: Type.Optional(enviarEn()),
      }),
      headers: idemHeaders,
      response: { 200: sent, ...idemResponses, ...errorResponses },
    };
    for (const path of ['/panel/api_wa.php', '/api/api-legacy.php']) {
      scope.post(path, {
        bodyLimit: base64BodyLimit(MEDIA_RULES.documento.base64MaxBytes),
        config: { mediaBody: legacyBody },
        preValidation: async (req) => {
          const b = bodyOf(req);
          await legacyAuth(req, typeof b.token === 'string' ? b.token : undefined);
        },
        schema: path === '/panel/api_wa.php' ? legacySchema : aliasSchema(legacySchema, 'enviarLegacyAliasApi', '/panel/api_wa.php'),
        handler: async (req, reply) => {
          const b = bodyOf(req);
          // Both paths are one endpoint: a key used on one is the same request on the other.
          const idem = idemOf(req, '/panel/api_wa.php');
          const modo = str(b, 'modo');
          if (modo !== undefined && modo !== '' && modo.toLowerCase() !== 'directo' && modo.toLowerCase() !== 'cola') {
            fail('INVALID_PARAMS', 'modo must be directo (or absent for the queue)');
          }
          const directo = modo?.toLowerCase() === 'directo';
          const file = takeUpload(req);
          const enviar = str(b, 'enviar_en');
          const base = {
            destinatario: String(b.destinatario),
            directo,
            ...(idem ? { idem } : {}),
            ...(enviar !== undefined ? { enviar_en: enviar } : {}),
            ...vigenciaOf(b),
          };
          if (!file)
            return answer(
              reply,
              await send(core, deps, principal(req), { ...base, tipo: 'texto', texto: String(b.mensaje) }, (r) => present(r, 'texto', false)),
            );
          // The body parser checked the file against this type (tipomime is required with a file).
          const tipomime = normalizeMime(str(b, 'tipomime'))!;
          const tipo = legacyTipo(tipomime)!;
          const ext =
            tipomime
              .split('/')[1]
              ?.replace(/[^a-z0-9]/g, '')
              .slice(0, 10) || 'bin';
          const r = await send(
            core,
            deps,
            principal(req),
            {
              ...base,
              tipo,
              file,
              mime: tipomime,
              caption: String(b.mensaje),
              ...(tipo === 'documento' ? { filename: `archivo.${ext}` } : {}),
            },
            (x) => present(x, tipo, true),
          );
          return answer(reply, r);
        },
      });
    }
  });
}
