// The few parts of `ws` (a dependency of baileys, untyped here: no @types/ws) the fake uses.
declare module 'ws' {
  import type { EventEmitter } from 'node:events';
  import type { Server as HttpServer } from 'node:http';
  export class WebSocket extends EventEmitter {
    readonly readyState: number;
    send(data: Buffer, cb?: (err?: Error) => void): void;
    close(code?: number): void;
    terminate(): void;
  }
  export class WebSocketServer extends EventEmitter {
    constructor(opts: { server?: HttpServer; port?: number; host?: string });
    readonly clients: Set<WebSocket>;
    close(cb?: (err?: Error) => void): void;
  }
}
