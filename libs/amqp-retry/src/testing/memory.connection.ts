import { EventEmitter } from 'node:events';
import type { ConsumeMessage } from 'amqplib';
import type { BrokerError } from './broker.error.js';
import { MemoryChannel, type ChannelHost, type PublishRecord } from './memory.channel.js';
import type { MemoryBroker } from './memory.broker.js';

/** The amqplib internals the library adapts (channel numbers, socket writes), so that it finds them and says nothing; no-ops here. */
function internals(version: string) {
  const out = { cork() {}, uncork() {}, write: () => true, writableLength: 0, writableHighWaterMark: 16_384 };
  return {
    serverProperties: { product: 'RabbitMQ', version, platform: 'nestjs-amqp-retry/testing', capabilities: {} },
    channelMax: 2047,
    channels: [] as unknown[],
    freeChannels: { set() {}, clear() {} },
    releaseChannel() {},
    muxer: { out, _readIncoming() {} },
  };
}

/** An amqplib ChannelModel of the in-memory broker. */
export class MemoryConnection extends EventEmitter implements ChannelHost {
  readonly id: number;
  readonly connection: ReturnType<typeof internals>;
  private readonly channels = new Set<MemoryChannel>();
  private closed = false;

  constructor(
    readonly broker: MemoryBroker,
    /** ChannelHost.published: the harness's records and injected refusals. */
    readonly published: (record: PublishRecord) => boolean,
    version: string,
    /** ChannelHost.interrupted: the harness's records. */
    readonly interrupted: (message: ConsumeMessage) => void = () => undefined,
  ) {
    super();
    this.id = broker.next('connection');
    this.connection = internals(version);
  }

  get isOpen(): boolean {
    return !this.closed;
  }

  async createChannel(): Promise<MemoryChannel> {
    return this.open(false);
  }

  async createConfirmChannel(): Promise<MemoryChannel> {
    return this.open(true);
  }

  async close(): Promise<void> {
    if (this.closed) throw new Error('Connection closed (Error: Unexpected close)');
    await Promise.resolve();
    this.end(undefined);
  }

  /** The connection is lost as a socket is (no close from the broker): every channel closes, then the connection. */
  lose(reason = 'Unexpected close'): void {
    this.end(new Error(reason));
  }

  fail(error: BrokerError): void {
    const closing = Object.assign(new Error(`Connection closed: ${error.closeMessage}`), { code: error.code });
    this.emit('error', closing);
    this.end(closing);
  }

  forget(channel: MemoryChannel): void {
    this.channels.delete(channel);
  }

  private async open(confirm: boolean): Promise<MemoryChannel> {
    if (this.closed) throw new Error('Connection closed');
    await Promise.resolve();
    const channel = new MemoryChannel(this, confirm);
    this.channels.add(channel);
    return channel;
  }

  private end(error: Error | undefined): void {
    if (this.closed) return;
    this.closed = true;
    for (const channel of [...this.channels]) channel.connectionClosed();
    this.channels.clear();
    for (const queue of [...this.broker.queues.values()]) if (queue.owner === this.id) this.broker.deleteQueue(queue.name);
    this.emit('close', error);
  }
}
