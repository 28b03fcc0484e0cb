import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP proxy to a real service that a test can cut (connections
 * dropped, port closed), stall (connections kept, bytes held back: a hung
 * server or a partition) and restore on the same port: an outage without touching the service.
 */
export interface TcpProxy {
  port: number;
  cut(): Promise<void>;
  /** While on, bytes both ways are held back; off sends them on, in order. */
  stall(on: boolean): void;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let stalled = false;
  /** Bytes held back while stalled, per connection; a network that stalls delays bytes, it does not lose them. */
  const holds = new Set<Array<() => void>>();
  let port = 0;
  let server: Server | null = null;

  const listen = async () => {
    const srv = createServer((client) => {
      const upstream = connect({ host: targetHost, port: targetPort });
      sockets.add(client).add(upstream);
      const held: Array<() => void> = [];
      holds.add(held);
      const forget = () => {
        holds.delete(held);
        sockets.delete(client);
        sockets.delete(upstream);
        client.destroy();
        upstream.destroy();
      };
      client.on('data', (d) => (stalled ? held.push(() => upstream.write(d)) : upstream.write(d)));
      upstream.on('data', (d) => (stalled ? held.push(() => client.write(d)) : client.write(d)));
      client.on('error', forget).on('close', forget);
      upstream.on('error', forget).on('close', forget);
    });
    await new Promise<void>((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(port, '127.0.0.1', () => resolve());
    });
    port = (srv.address() as AddressInfo).port;
    server = srv;
  };

  const cut = async () => {
    const srv = server;
    server = null;
    for (const s of sockets) s.destroy();
    sockets.clear();
    if (srv) await new Promise((r) => srv.close(r));
  };

  await listen();
  return {
    get port() {
      return port;
    },
    cut,
    stall: (on) => {
      stalled = on;
      if (!on) for (const held of holds) for (const write of held.splice(0)) write();
    },
    restore: async () => {
      if (!server) await listen();
    },
    close: cut,
  };
}

/** A loopback port nothing listens on (taken, then released). */
export async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as AddressInfo;
  await new Promise((r) => srv.close(r));
  return port;
}
