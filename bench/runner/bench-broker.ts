import amqp, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import type { BenchBody } from '../contenders/contender.js';
import { readPlanRecord } from '../contenders/our-topology.js';

/** Unconfirmed publishes at most while filling: bounds the client's buffers, keeps the broker streaming. */
const FILL_BATCH = 1_000;
/** Paced publishing sends what is due this often. */
const PACE_TICK_MS = 5;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface Names {
  /** Queues that must be empty after a run. */
  queues: string[];
  exchanges: string[];
  /**
   * The library's plan queue: one record listing the tier queues a start applied (`readTiers`). Never empty, so not
   * among `queues`; deleted with them, and so is every tier it lists.
   */
  planQueue?: string;
}

/**
 * The runner's own connection: fills queues before a contender consumes them, publishes at a steady rate while one
 * does, checks what is left, and deletes what a run declared. Publishes as a user would: persistent, confirmed.
 */
export class BenchBroker {
  private constructor(
    private readonly model: ChannelModel,
    private readonly channel: ConfirmChannel,
  ) {}

  static async connect(url: string): Promise<BenchBroker> {
    const model = await amqp.connect(url, { noDelay: true, clientProperties: { connection_name: `bench runner pid ${process.pid}` } });
    const channel = await model.createConfirmChannel();
    return new BenchBroker(model, channel);
  }

  /** "RabbitMQ 3.10.8", from the server properties of the connection. */
  get serverVersion(): string {
    const { product, version } = this.model.connection.serverProperties;
    return `${product} ${version}`;
  }

  async declareQueue(queue: string): Promise<void> {
    await this.channel.assertQueue(queue, { durable: true });
  }

  /** A durable direct exchange and a durable queue bound to it with `routingKey`: where the publish scenario publishes. */
  async declareBoundQueue(queue: string, exchange: string, routingKey: string): Promise<void> {
    await this.channel.assertExchange(exchange, 'direct', { durable: true });
    await this.channel.assertQueue(queue, { durable: true });
    await this.channel.bindQueue(queue, exchange, routingKey);
  }

  /** Publishes bodies {id: 0} .. {id: count-1} to `queue` through the default exchange and waits for every confirm. */
  async fill(queue: string, count: number, encode: (body: BenchBody) => Buffer): Promise<void> {
    for (let id = 0; id < count;) {
      for (const end = Math.min(count, id + FILL_BATCH); id < end; id++) this.send(queue, encode({ id }));
      await this.channel.waitForConfirms();
    }
  }

  /** Publishes `count` bodies at `perSecond`, spread over ticks, then waits for every confirm. */
  async publishPaced(queue: string, count: number, perSecond: number, encode: (body: BenchBody) => Buffer): Promise<void> {
    const startedAt = performance.now();
    for (let id = 0; id < count;) {
      const due = Math.min(count, Math.floor(((performance.now() - startedAt) / 1000) * perSecond) + 1);
      for (; id < due; id++) this.send(queue, encode({ id }));
      await sleep(PACE_TICK_MS);
    }
    await this.channel.waitForConfirms();
  }

  /** Ready messages in `queue`, or undefined when it does not exist. */
  async depth(queue: string): Promise<number | undefined> {
    // A passive check of a missing queue is a 404 that closes its channel, hence a channel of its own.
    const probe = await this.model.createChannel();
    probe.on('error', () => undefined);
    try {
      return (await probe.checkQueue(queue)).messageCount;
    } catch {
      return undefined;
    } finally {
      await probe.close().catch(() => undefined);
    }
  }

  /**
   * The tier queues (current and retiring) that the record in `planQueue` lists, or [] when there is no queue or no
   * record. The record is read without taking it: closing the probe channel returns it unacked.
   */
  async planTiers(planQueue: string): Promise<string[]> {
    const probe = await this.model.createChannel();
    probe.on('error', () => undefined);
    try {
      const message = await probe.get(planQueue, { noAck: false });
      const record = message ? readPlanRecord(message.content) : undefined;
      return record ? [...record.tiers, ...record.retiring] : [];
    } catch {
      return []; // 404: the run failed before the library declared it
    } finally {
      await probe.close().catch(() => undefined);
    }
  }

  /**
   * Deletes queues and exchanges, and the tiers a plan record lists besides; missing ones are fine (a run may fail
   * before declaring them).
   */
  async delete(names: Names): Promise<void> {
    const listed = names.planQueue ? await this.planTiers(names.planQueue) : [];
    const queues = new Set([...names.queues, ...listed, ...(names.planQueue ? [names.planQueue] : [])]);
    for (const queue of queues) await this.channel.deleteQueue(queue);
    for (const exchange of names.exchanges) await this.channel.deleteExchange(exchange);
  }

  async close(): Promise<void> {
    await this.model.close().catch(() => undefined);
  }

  private send(queue: string, content: Buffer): void {
    this.channel.sendToQueue(queue, content, { persistent: true, contentType: 'application/json' });
  }
}
