import net from 'node:net';
import { AMQP_URL } from './broker.js';

const broker = new URL(AMQP_URL);
const brokerPort = Number(broker.port || (broker.protocol === 'amqps:' ? 5671 : 5672));

/**
 * A TCP proxy on 127.0.0.1 in front of a server, by default the broker under test (AMQP_URL), to cut the network
 * under a client: `cut()` drops every connection and refuses new ones, `restore()` accepts again on the same port;
 * `stall()` stops carrying what clients send (the server's replies still come) until `resume()`.
 */
export class TcpProxy {
  private server?: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private readonly pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();
  port = 0;

  constructor(
    private readonly targetHost = broker.hostname.replace(/^\[(.*)\]$/, '$1'),
    private readonly targetPort = brokerPort,
  ) {}

  /** Client connections open through the proxy now. */
  get clients(): number {
    return this.sockets.size / 2;
  }

  /** AMQP_URL (its credentials, vhost and query) with the proxy in place of the broker. */
  get url(): string {
    const url = new URL(AMQP_URL);
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    return url.toString();
  }

  async start(): Promise<this> {
    const server = net.createServer((client) => {
      const upstream = net.connect(this.targetPort, this.targetHost);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      const pair = { client, upstream };
      this.pairs.add(pair);
      client.on('close', () => (this.pairs.delete(pair), upstream.destroy()));
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
    return this;
  }

  /** What clients send waits (in their socket buffers, then in the client) until `resume()`; replies still come. */
  stall(): void {
    for (const { client, upstream } of this.pairs) {
      client.unpipe(upstream);
      client.pause();
    }
  }

  resume(): void {
    for (const { client, upstream } of this.pairs) client.pipe(upstream);
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }

  async restore(): Promise<void> {
    if (!this.server) await this.start();
  }

  async stop(): Promise<void> {
    await this.cut();
  }
}
