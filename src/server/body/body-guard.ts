import type { Clock } from '../../core/time/clock.js';
import { Transform, type Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../../core/api/errors.js';
import { UnauthBudget, type Overrun } from './unauth-budget.js';

/**
 * Watches one request body as it arrives (the preParsing stage wraps every
 * body in it): counts its bytes against the unauthenticated budget until
 * the request is authenticated, and cuts a body that is too slow. The body
 * must start within `bodyTimeoutMs`, and each `bodyMinRate` bytes extend that
 * deadline by a second (Apache mod_reqtimeout's body=N,MinRate=R), so a
 * trickle is cut while a large upload at a normal rate is not; the request
 * as a whole never takes more than `requestTimeoutMs`.
 */
export interface BodyTimeouts {
  bodyTimeoutMs: number;
  /** Bytes per second. */
  bodyMinRate: number;
  requestTimeoutMs: number;
}

/** When a refused client may try again: unauthenticated bodies in flight usually end within this. */
const RETRY_AFTER_S = 5;

function overrunError(o: Exclude<Overrun, null>, budget: UnauthBudget): AppError {
  return o === 'address'
    ? new AppError(
        'UNAUTHENTICATED_BODY_LIMIT',
        `this address already has ${budget.perAddress} bytes of request bodies in flight without a verified credential; send the key in the Authorization header, or retry in ${RETRY_AFTER_S} s`,
        { retryAfter: RETRY_AFTER_S },
      )
    : new AppError(
        'SERVER_BUSY',
        `the server already holds ${budget.serverWide} bytes of request bodies without a verified credential; retry in ${RETRY_AFTER_S} s`,
        { retryAfter: RETRY_AFTER_S },
      );
}

export class BodyGuard {
  private authed = false;
  private held = 0;
  private received = 0;
  private bodyStart = 0;
  private timer: NodeJS.Timeout | undefined;
  private stream: Transform | undefined;

  constructor(
    private readonly budget: UnauthBudget,
    private readonly address: string,
    private readonly timeouts: BodyTimeouts,
    private readonly requestStart: number,
    /** Monotonic milliseconds (the clock's ticks): a step of the wall clock must not cut or stretch a body's time. */
    private readonly ticks: () => number,
  ) {}

  /** The request's credential is verified: its bytes no longer count. */
  authenticated(): void {
    this.authed = true;
    this.release();
  }

  /** The body as the parsers should read it: the same bytes, watched. */
  wrap(raw: Readable): Readable {
    this.bodyStart = this.ticks();
    const t = new Transform({
      transform: (chunk: Buffer, _enc, cb) => {
        const refusal = this.onBytes(chunk.length);
        if (refusal) cb(refusal);
        else cb(null, chunk);
      },
    });
    this.stream = t;
    raw.pipe(t);
    raw.on('error', (err) => t.destroy(err));
    // Stop reading at once when the body is refused or abandoned: the answer closes the connection instead.
    const stop = () => {
      raw.unpipe(t);
      raw.pause();
    };
    t.on('error', stop);
    t.on('finish', () => this.settle());
    t.on('close', () => {
      if (!raw.readableEnded) stop();
      this.settle();
    });
    this.arm();
    return t;
  }

  private onBytes(n: number): AppError | null {
    this.received += n;
    if (this.authed) return null;
    const over = this.budget.take(this.address, n);
    if (over) return overrunError(over, this.budget);
    this.held += n;
    return null;
  }

  private deadline(): number {
    const byRate = this.bodyStart + this.timeouts.bodyTimeoutMs + (this.received / this.timeouts.bodyMinRate) * 1000;
    return Math.min(byRate, this.requestStart + this.timeouts.requestTimeoutMs);
  }

  private arm(): void {
    const wait = this.deadline() - this.ticks();
    if (wait <= 0) {
      this.timer = undefined;
      this.stream?.destroy(this.timeoutError());
      return;
    }
    this.timer = setTimeout(() => this.arm(), wait);
    this.timer.unref();
  }

  private timeoutError(): AppError {
    const t = this.timeouts;
    if (this.ticks() >= this.requestStart + t.requestTimeoutMs) {
      return new AppError('REQUEST_TIMEOUT', `the request took longer than ${t.requestTimeoutMs / 1000} s to arrive`);
    }
    const s = Math.round((this.ticks() - this.bodyStart) / 1000);
    return new AppError(
      'REQUEST_TIMEOUT',
      `the request body arrived too slowly (${this.received} bytes in ${s} s; it must start within ${t.bodyTimeoutMs / 1000} s, then each ${t.bodyMinRate} bytes buy a second)`,
    );
  }

  private release(): void {
    this.budget.give(this.address, this.held);
    this.held = 0;
  }

  /** The body is complete, refused or abandoned. */
  private settle(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.release();
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    bodyGuard?: BodyGuard;
  }
}

export interface BodyGuardOptions extends BodyTimeouts {
  unauthPerAddress: number;
  unauthServerWide: number;
}

/** Watches every request body from the first byte: a guard wraps the body as its parsing starts. */
export function installBodyGuards(app: FastifyInstance, opts: BodyGuardOptions, clock: Clock): void {
  const budget = new UnauthBudget(opts.unauthPerAddress, opts.unauthServerWide);
  app.decorateRequest('bodyGuard', undefined);
  // Made only for a request with a body, when its parsing starts: a GET costs nothing.
  app.addHook('preParsing', async (req, reply, payload) => {
    // Fastify never parses a GET or HEAD body: left unread, Node discards it after the answer.
    if (req.method === 'GET' || req.method === 'HEAD') return payload;
    const h = req.headers;
    const hasBody = h['transfer-encoding'] !== undefined || Number(h['content-length'] ?? 0) > 0;
    if (!hasBody) return payload;
    const ticks = () => clock.ticks();
    req.bodyGuard = new BodyGuard(budget, req.ip, opts, ticks() - reply.elapsedTime, ticks);
    // A key in the header or query was verified before the body (onRequest): its bytes never count.
    if (req.principal) req.bodyGuard.authenticated();
    return req.bodyGuard.wrap(payload);
  });
}
