import type { Channel, ConsumeMessage } from 'amqplib';
import type { AmqpConnection } from '../amqp/amqp.connection.js';
import { PartitionMembership } from './partition.membership.js';
import { MAX_MEMBERS } from '../core/partitions/membership.view.js';

const silent = { log: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };

/** A membership whose announcements are recorded as published: `{ id, leaving, count, ready }` each. */
function membership() {
  const published: Array<{ id: string; leaving: boolean; count: number; ready: boolean }> = [];
  const channel = {
    on: () => channel,
    publish: (_exchange: string, _key: string, content: Buffer) =>
      void published.push(JSON.parse(content.toString()) as { id: string; leaving: boolean; count: number; ready: boolean }),
  } as unknown as Channel;
  let open!: (channel: Channel) => void;
  const opening = new Promise<Channel>((resolve) => (open = resolve));
  const deps = { connection: {} as AmqpConnection, publishing: { channel: () => opening, user: 'app' }, logger: silent, users: ['app'] };
  return {
    published,
    openChannel: () => open(channel),
    members: new PartitionMembership('m-1', 4, 'orders', 'orders.members', 1_000, deps, () => undefined),
  };
}

describe("a partitioned handler's announcements", () => {
  it('sends nothing after it announced that it leaves: a start still under way when its stop came stays silent', async () => {
    const { published, openChannel, members } = membership();
    openChannel();
    await members.announce(true);
    await members.announce();
    await members.announce(true);
    expect(published).toEqual([{ id: 'm-1', leaving: true, count: 4, ready: false }]);
  });

  it('says it is not ready until it has taken its first share, then says it is at once, once', async () => {
    const { published, openChannel, members } = membership();
    openChannel();
    await members.announce();
    await members.markReady();
    await members.markReady();
    await members.announce();
    expect(published.map((p) => p.ready)).toEqual([false, true, true]);
  });

  it('sends an announcement begun before the leave first, then the leave, in that order', async () => {
    const { published, openChannel, members } = membership();
    const alive = members.announce(); // waits for the channel, as a start's first announcement does
    const leaving = members.announce(true);
    openChannel();
    await Promise.all([alive, leaving]);
    expect(published).toEqual([
      { id: 'm-1', leaving: false, count: 4, ready: false },
      { id: 'm-1', leaving: true, count: 4, ready: false },
    ]);
  });
});

/** A listening membership of member "m-1" (broker user "app"): `deliver` hands it an announcement as its queue would. */
async function listening() {
  const warnings: string[] = [];
  let consumer!: (message: ConsumeMessage | null) => void;
  const channel = {
    on: () => channel,
    assertExchange: async () => undefined,
    assertQueue: async () => ({ queue: 'amq.gen-1' }),
    bindQueue: async () => undefined,
    consume: async (_queue: string, onMessage: typeof consumer) => void (consumer = onMessage),
  } as unknown as Channel;
  const connection = { createChannel: async () => channel } as unknown as AmqpConnection;
  const logger = { ...silent, warn: (line: string) => void warnings.push(line) };
  let changes = 0;
  const members = new PartitionMembership(
    'm-1',
    4,
    'orders',
    'orders.members',
    1_000,
    { connection, publishing: { channel: async () => channel, user: 'app' }, logger, users: ['app'] },
    () => void changes++,
  );
  await members.listen();
  const deliver = (body: object, userId?: string) =>
    consumer({ content: Buffer.from(JSON.stringify(body)), properties: { userId }, fields: {} } as unknown as ConsumeMessage);
  deliver({ id: 'm-1', count: 4 }, 'app'); // it hears itself
  return { members, deliver, warnings, changes: () => changes };
}

describe("a partitioned handler's membership", () => {
  it("hears only announcements the broker validated as this application's user: a forged or older one joins no membership", async () => {
    const { members, deliver, warnings, changes } = await listening();
    deliver({ id: 'forged', count: 4 }); // no userId: an older version's, or anyone's
    deliver({ id: 'other', count: 4 }, 'mallory');
    deliver({ id: 'm-2', count: 4 }, 'app');
    expect(members.alive(Date.now()).map((m) => m.id)).toEqual(['m-1', 'm-2']);
    expect(changes()).toBe(1);
    expect(warnings).toEqual([expect.stringContaining('no broker-validated user (userId), not one of this application\'s ("app")')]);
  });

  it('keeps at most MAX_MEMBERS other members, and says so once, however many made-up ids are announced, beside other kinds', async () => {
    const { members, deliver, warnings } = await listening();
    const started = Date.now();
    for (let i = 0; i < 20_000; i++) deliver({ id: `phantom-${i}`, count: 4 }, 'app');
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(members.alive(Date.now())).toHaveLength(MAX_MEMBERS + 1);
    deliver({ id: 'forged', count: 4 }); // another kind of ignored announcement: told too, not hidden by the flood
    expect(warnings).toEqual([
      expect.stringContaining(`${MAX_MEMBERS} members are heard already`),
      expect.stringContaining('no broker-validated user'),
    ]);
  });

  it('publishes its announcements with its broker user, which the broker validates', async () => {
    const options: unknown[] = [];
    const channel = { on: () => channel, publish: (_e: string, _k: string, _c: Buffer, o: unknown) => void options.push(o) } as unknown as Channel;
    const deps = { connection: {} as AmqpConnection, publishing: { channel: async () => channel, user: 'app' }, logger: silent, users: ['app'] };
    await new PartitionMembership('m-1', 4, 'orders', 'orders.members', 1_000, deps, () => undefined).announce();
    expect(options).toEqual([expect.objectContaining({ userId: 'app' })]);
  });

  it('rebalances when a member it hears says it has taken its first share, not on each of its announcements', async () => {
    const { deliver, changes } = await listening();
    deliver({ id: 'm-2', count: 4, ready: false }, 'app');
    deliver({ id: 'm-2', count: 4, ready: false }, 'app');
    expect(changes()).toBe(1);
    deliver({ id: 'm-2', count: 4, ready: true }, 'app');
    deliver({ id: 'm-2', count: 4, ready: true }, 'app');
    expect(changes()).toBe(2);
  });
});
