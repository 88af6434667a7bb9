import type { Channel } from 'amqplib';
import { SharedChannel } from './channel-close.settler.js';
import { existsOn } from './queue-exists.probe.js';

/**
 * Passive checks of exchanges and queues on one channel, opened again after a 404 closed it: cheaper than a channel
 * per check (queueExists), for checks that run before publishes. One at a time: a check beside a 404 would end with the
 * channel's close instead of its own answer.
 */
export class TargetProbe {
  private readonly channel = new SharedChannel<Channel>();
  /** Checks under way, by kind and name: a burst of publishes to one new target costs one check. */
  private readonly running = new Map<string, Promise<boolean>>();
  /** The last check begun: checks run one at a time, since a 404 closes the channel under any check beside it. */
  private tail: Promise<unknown> = Promise.resolve();

  constructor(private readonly open: () => Promise<Channel>) {}

  /** Whether the exchange exists ('' always does); any failure but a 404 is thrown. */
  exchangeExists(exchange: string): Promise<boolean> {
    if (exchange === '') return Promise.resolve(true);
    return this.once(`exchange ${exchange}`, (channel) => channel.checkExchange(exchange));
  }

  /** Whether the queue exists (a name over AMQP's 255 bytes never does); any failure but a 404 is thrown. */
  queueExists(queue: string): Promise<boolean> {
    if (Buffer.byteLength(queue) > 255) return Promise.resolve(false);
    return this.once(`queue ${queue}`, (channel) => channel.checkQueue(queue));
  }

  private once(name: string, check: (channel: Channel) => Promise<unknown>): Promise<boolean> {
    const running = this.running.get(name);
    if (running) return running;
    const checking = this.tail
      .then(async () => existsOn(await this.channel.get((forget) => this.open().then((opened) => opened.on('close', forget))), check))
      .finally(() => this.running.delete(name));
    this.tail = checking.catch(() => undefined);
    this.running.set(name, checking);
    return checking;
  }
}
