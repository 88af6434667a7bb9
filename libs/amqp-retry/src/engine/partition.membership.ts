import type { Channel } from 'amqplib';
import type { AmqpConnection } from '../amqp/amqp.connection.js';
import { MAX_MEMBERS, MembershipView, readAnnouncement } from '../core/partitions/membership.view.js';
import { DEAF_AFTER_HEARTBEATS, MISSED_HEARTBEATS } from '../core/partitions/partitions.config.js';
import type { PartitionMember } from '../core/partitions/partition.plan.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { PRIVATE_QUEUE_OPTIONS } from '../core/topology/queue-type.mismatch.js';
import type { PublishingSide } from './publishing.side.js';

/** What the membership of a partitioned handler needs of the engine. */
export interface MembershipDeps {
  connection: AmqpConnection;
  /** The publishing connection: its plain channels (announcements go there, never on the consuming one), and the user they go as now. */
  publishing: Pick<PublishingSide, 'channel' | 'user'>;
  logger: RetryLogger;
  /**
   * The broker users of the application's URLs: only announcements published as one of them (AMQP `user_id`, which the
   * broker checks against the publishing connection's own user) are heard, so that another user who may write to the
   * members' exchange cannot join the membership and be given partitions.
   */
  users: readonly string[];
}

/** At most one line a minute about each kind of ignored announcements. */
const IGNORED_LOG_MS = 60_000;

/**
 * One instance's part in a partitioned handler's membership: it announces itself, with its count, each heartbeat on the
 * fanout exchange `membersExchange` and hears the others (and itself) on an exclusive queue of its own. An instance that
 * stops hearing its own announcements (its queue cancelled or deleted, the exchange deleted) keeps its view as it is
 * and listens again, declaring what went missing (core/partitions/membership.view.ts says when it trusts what it hears).
 */
export class PartitionMembership {
  private readonly view: MembershipView;
  private listening?: Channel;
  private announcer?: Promise<Channel>;
  private announceFailed = false;
  private relistening?: Promise<void>;
  private deaf = false;
  private relistenFailed = false;
  private closed = false;
  /** It announced that it leaves. */
  private left = false;
  /** It has taken its first share: until then it announces `ready: false`, and the others give it no partition. */
  private ready = false;
  /** When each kind of ignored announcement was last logged: a flood of one kind does not hide the other. */
  private readonly lastIgnored = new Map<'user' | 'full', number>();

  constructor(
    readonly member: string,
    /** Its partitions.count: the partitions it runs, announced so that the others give it none beyond. */
    private readonly count: number,
    private readonly queue: string,
    private readonly membersExchange: string,
    private readonly heartbeatMs: number,
    private readonly deps: MembershipDeps,
    /** Called when a member it did not know is heard, one says it has taken its first share, or one says it leaves. */
    private readonly changed: () => void,
  ) {
    this.view = new MembershipView(member, heartbeatMs * MISSED_HEARTBEATS, heartbeatMs * DEAF_AFTER_HEARTBEATS, Date.now(), count);
  }

  get isListening(): boolean {
    return this.listening !== undefined;
  }

  /** The members alive at `now`, sorted, itself included, each with the count it announced. */
  alive(now: number): PartitionMember[] {
    return this.view.running(now);
  }

  /**
   * Declares the members' exchange and an exclusive queue of this instance bound to it, and hears the others; the
   * channel it listened on before, if any, is closed.
   */
  async listen(): Promise<void> {
    this.view.listening(Date.now()); // a failed attempt waits as long as a listener for its echo before the next
    const channel = await this.deps.connection.createChannel(`partition members of "${this.queue}"`);
    try {
      await channel.assertExchange(this.membersExchange, 'fanout', { durable: true });
      const { queue } = await channel.assertQueue('', { ...PRIVATE_QUEUE_OPTIONS });
      await channel.bindQueue(queue, this.membersExchange, '');
      await channel.consume(
        queue,
        (message) => {
          if (message === null) return void this.stopListening(channel); // cancelled by the broker: heard as deafness
          const { userId } = message.properties;
          if (typeof userId !== 'string' || !this.deps.users.includes(userId)) {
            const user = typeof userId === 'string' ? `broker user "${userId}"` : 'no broker-validated user (userId)';
            return this.ignored(
              'user',
              `an announcement with ${user}, not one of this application's (${this.deps.users.map((u) => `"${u}"`).join(', ')}) (an instance of a version that announces without userId, or another user's publisher): it joins no membership`,
            );
          }
          const announcement = readAnnouncement(message.content);
          if (announcement === undefined) return;
          const heard = this.view.heard(announcement, Date.now());
          if (heard === 'full') {
            return this.ignored(
              'full',
              `"${announcement.id}": ${MAX_MEMBERS} members are heard already (the most kept; announcements with made-up ids?)`,
            );
          }
          if (announcement.leaving || heard === 'new' || heard === 'ready') this.changed();
        },
        { noAck: true },
      );
      channel.on('close', () => {
        if (this.listening === channel) this.listening = undefined;
      });
    } catch (error) {
      await channel.close().catch(() => undefined);
      throw error;
    }
    const previous = this.listening;
    this.listening = channel;
    if (previous) await previous.close().catch(() => undefined);
    if (this.closed) await this.stopListening(channel);
  }

  /** Best effort: a missed heartbeat is made up by the next; the others wait 3 before they count this one gone. */
  async announce(leaving = false): Promise<void> {
    // Leaving is the last word: an announcement that comes after it (a start that was still listening when its stop
    // came) would have the others count this instance alive, and give it partitions, for three more heartbeats.
    if (this.left) return;
    if (leaving) this.left = true;
    try {
      this.announcer ??= this.deps.publishing.channel(`partition announcements of "${this.queue}"`, true).then((channel) => {
        channel.on('close', () => (this.announcer = undefined));
        return channel;
      });
      const channel = await this.announcer;
      const announcement = Buffer.from(JSON.stringify({ id: this.member, leaving, count: this.count, ready: this.ready }));
      const expiration = String(this.heartbeatMs * MISSED_HEARTBEATS);
      channel.publish(this.membersExchange, '', announcement, { expiration, persistent: false, userId: this.deps.publishing.user });
      this.announceFailed = false;
    } catch (error) {
      this.announcer = undefined;
      if (!this.announceFailed) this.deps.logger.warn(`"${this.queue}": could not announce this instance to the others: ${errorMessage(error)}`);
      this.announceFailed = true;
    }
  }

  /** It has taken its first share (subscribed to what it owns): says so at once, and the owners of the rest of its share hand over. */
  async markReady(): Promise<void> {
    if (this.ready) return;
    this.ready = true;
    await this.announce();
  }

  /** Each heartbeat: an instance that does not hear its own announcements warns once and listens again. */
  checkHearing(): void {
    const now = Date.now();
    if (this.view.hears(now)) {
      if (this.deaf) this.deps.logger.log(`"${this.queue}": hears the members again`);
      this.deaf = false;
      this.relistenFailed = false;
      return;
    }
    if (!this.view.isDeaf(now)) return; // a listener just (re)started: its own announcement has not come back yet
    if (!this.deaf) {
      this.deps.logger.warn(
        `"${this.queue}": does not hear its own announcements on "${this.membersExchange}" (its queue or the exchange was deleted, or its announcements fail?); its partitions stay as they are until it hears itself, and it listens again unless its announcements fail`,
      );
    }
    this.deaf = true;
    // Its announcements failing (the publishing connection down, a broker alarm) explain the silence: the listener stays.
    if (this.relistening || this.closed || this.announceFailed || !this.deps.connection.isConnected) return;
    this.relistening = this.listen()
      .catch((error: unknown) => {
        if (!this.relistenFailed) this.deps.logger.warn(`"${this.queue}": could not listen to the members again: ${errorMessage(error)}`);
        this.relistenFailed = true;
      })
      .finally(() => (this.relistening = undefined));
  }

  /** Closes its channels; a listen still under way closes its own when it is done. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.listening) await this.stopListening(this.listening);
    const announcer = this.announcer;
    this.announcer = undefined;
    await announcer?.then((c) => c.close()).catch(() => undefined);
  }

  private ignored(kind: 'user' | 'full', what: string): void {
    const now = Date.now();
    if (now - (this.lastIgnored.get(kind) ?? Number.NEGATIVE_INFINITY) < IGNORED_LOG_MS) return;
    this.lastIgnored.set(kind, now);
    this.deps.logger.warn(`"${this.queue}": ignored ${what} (at most one such line a minute)`);
  }

  private async stopListening(channel: Channel): Promise<void> {
    if (this.listening === channel) this.listening = undefined;
    await channel.close().catch(() => undefined);
  }
}
