import { randomUUID } from 'node:crypto';
import amqp, { type Channel, type ChannelModel, type GetMessage, type Options } from 'amqplib';
import { HANDLER_REGISTRY_QUEUE, readHandlerRecord } from '../../libs/amqp-retry/src/core/topology/handler-registry.record.js';
import { readPlanRecord } from '../../libs/amqp-retry/src/core/topology/retry-plan.record.js';
import { withRegistryLock } from '../../libs/amqp-retry/src/amqp/handler-registry.writer.js';
import { planDelayTopology } from 'nestjs-amqp-retry';

export const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

/** Whether an exchange exists, probed on a connection of its own (a 404 closes the channel it happens on). */
export async function exchangeExists(name: string, url = AMQP_URL): Promise<boolean> {
  const connection = await amqp.connect(url);
  try {
    const channel = await connection.createChannel();
    channel.on('error', () => undefined);
    return await channel.checkExchange(name).then(
      () => true,
      () => false,
    );
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/** A name no other test uses: `prefix.<8 hex>`. */
export const uniqueName = (prefix: string) => `${prefix}.${randomUUID().slice(0, 8)}`;

/** Polls `probe` until it returns a value other than undefined/false, or fails after `timeoutMs`. */
export async function waitFor<T>(probe: () => Promise<T | undefined | false> | T | undefined | false, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** A plain amqplib client for tests: publishes as a user would and inspects queues from outside the library. */
export class TestBroker {
  private constructor(
    private readonly model: ChannelModel,
    readonly channel: Channel,
  ) {}

  /** The broker's version, as it announces it on connection ("3.10.8", "4.3.6"). */
  get version(): string {
    return String(this.model.connection.serverProperties.version ?? '');
  }

  /** `url`: another broker than the test broker, e.g. one node of the cluster in test/cluster/. */
  static async connect(url = AMQP_URL): Promise<TestBroker> {
    const model = await amqp.connect(url);
    const channel = await model.createConfirmChannel();
    return new TestBroker(model, channel);
  }

  async publish(exchange: string, routingKey: string, body: unknown | Buffer, options: Options.Publish = {}): Promise<void> {
    const content = Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
    this.channel.publish(exchange, routingKey, content, { persistent: true, contentType: 'application/json', ...options });
    await (this.channel as amqp.ConfirmChannel).waitForConfirms();
  }

  /** Messages ready in the queue, or undefined when it does not exist. */
  async count(queue: string): Promise<number | undefined> {
    return (await this.check(queue))?.messageCount;
  }

  /** Consumers of the queue, or undefined when it does not exist. */
  async consumers(queue: string): Promise<number | undefined> {
    return (await this.check(queue))?.consumerCount;
  }

  /** A passive declare on a channel of its own, since a 404 closes the channel. */
  private async check(queue: string) {
    const probe = await this.model.createChannel();
    probe.on('error', () => undefined);
    try {
      return await probe.checkQueue(queue);
    } catch {
      return undefined;
    } finally {
      await probe.close().catch(() => undefined);
    }
  }

  async exists(queue: string): Promise<boolean> {
    return (await this.count(queue)) !== undefined;
  }

  /** Takes every ready message out of a queue (acked). */
  async drain(queue: string): Promise<GetMessage[]> {
    const messages: GetMessage[] = [];
    for (let message = await this.channel.get(queue, { noAck: true }); message; message = await this.channel.get(queue, { noAck: true })) {
      messages.push(message);
    }
    return messages;
  }

  /** Waits for exactly `n` messages in `queue` and takes them. */
  async take(queue: string, n: number, timeoutMs = 10_000): Promise<GetMessage[]> {
    await waitFor(async () => ((await this.count(queue)) ?? 0) >= n, `${n} message(s) in ${queue}`, timeoutMs);
    return this.drain(queue);
  }

  async declareQueue(queue: string, bindTo?: { exchange: string; key: string }): Promise<void> {
    await this.channel.assertQueue(queue, { durable: true });
    if (bindTo) await this.channel.bindQueue(queue, bindTo.exchange, bindTo.key);
  }

  /**
   * Deletes what handlers on `queue` declared (and any extra queues and exchanges): the tier queues of every
   * configuration are named in the plan record.
   */
  async deleteRetryTopology(queue: string, extra: { queues?: readonly string[]; exchanges?: readonly string[] } = {}): Promise<void> {
    const tiers = new Set<string>();
    const planQueue = `${queue}.retry.plan`;
    if (await this.exists(planQueue)) {
      for (const { content } of await this.drain(planQueue)) {
        const record = readPlanRecord(content);
        for (const name of [...(record?.tiers ?? []), ...(record?.retiring ?? [])]) tiers.add(name);
      }
    }
    for (const name of [queue, `${queue}.error`, `${queue}.dlx.dead`, planQueue, ...tiers, ...(extra.queues ?? [])])
      await this.channel.deleteQueue(name);
    const exchanges = [`${queue}.dlx`, `${queue}.dlx.first`, `${queue}.dlx.sort`, `${queue}.dlx.first-tier`, `${queue}.return`];
    for (const name of [...exchanges, ...(extra.exchanges ?? [])]) await this.channel.deleteExchange(name);
    await this.forgetHandler(queue);
  }

  /**
   * Removes the records of `queue` from the handler registry that every start writes to; other records go back. It
   * takes the registry's lock, as the library's readers do: records held unacked here are invisible to a reader in
   * another process meanwhile.
   */
  async forgetHandler(queue: string): Promise<void> {
    const open = async () => {
      const opened = await this.model.createChannel();
      opened.on('error', () => undefined);
      return opened;
    };
    await withRegistryLock(open, async () => {
      const channel = await open();
      try {
        await channel.checkQueue(HANDLER_REGISTRY_QUEUE);
        for (let m = await channel.get(HANDLER_REGISTRY_QUEUE); m; m = await channel.get(HANDLER_REGISTRY_QUEUE)) {
          if (readHandlerRecord(m.content)?.queue === queue) channel.ack(m);
        }
      } catch {
        // no registry (a 404 closed the channel)
      } finally {
        await channel.close().catch(() => undefined);
      }
    });
  }

  /**
   * Deletes a delay ladder, of both queue types. `onlyIfEmpty` spares queues that hold messages (the shared default
   * ladder may carry someone else's): those stay, with their exchanges.
   */
  async deleteDelayLadder(prefix: string, onlyIfEmpty = false): Promise<void> {
    for (const queueType of ['classic', 'quorum'] as const) {
      const ladder = planDelayTopology(prefix, queueType);
      const levels = ladder.queues.filter((q) => q.name !== ladder.readyQueue && q.name !== ladder.errorQueue);
      if (!(await this.exists(ladder.readyQueue)) && !(await this.exists(levels[0].name)) && !(await this.exists(levels[levels.length - 1].name)))
        continue;
      const channel = await this.model.createChannel();
      channel.on('error', () => undefined);
      try {
        for (const { name } of ladder.queues) {
          // A quorum queue does not implement ifEmpty (540, which closes the connection): count first.
          if (queueType === 'quorum' && onlyIfEmpty && ((await this.count(name)) ?? 0) > 0) throw new Error(`${name} holds messages`);
          await channel.deleteQueue(name, { ifEmpty: onlyIfEmpty && queueType === 'classic' });
        }
        for (const { name } of ladder.exchanges) await channel.deleteExchange(name, { ifUnused: onlyIfEmpty });
      } catch {
        // a 406 (not empty, in use) closed the channel: what remains stays
      } finally {
        await channel.close().catch(() => undefined);
      }
      if (!(await this.exists(ladder.readyQueue))) await this.forgetHandler(ladder.readyQueue);
    }
  }

  async close(): Promise<void> {
    await this.model.close().catch(() => undefined);
  }
}
