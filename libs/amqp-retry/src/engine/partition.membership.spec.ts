import type { Channel } from 'amqplib';
import type { AmqpConnection } from '../amqp/amqp.connection.js';
import { PartitionMembership } from './partition.membership.js';

const silent = { log: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };

/** A membership whose announcements are recorded as published: `{ id, leaving, count }` each. */
function membership() {
  const published: Array<{ id: string; leaving: boolean; count: number }> = [];
  const channel = {
    on: () => channel,
    publish: (_exchange: string, _key: string, content: Buffer) =>
      void published.push(JSON.parse(content.toString()) as { id: string; leaving: boolean; count: number }),
  } as unknown as Channel;
  let open!: (channel: Channel) => void;
  const opening = new Promise<Channel>((resolve) => (open = resolve));
  const deps = { connection: {} as AmqpConnection, publishingChannel: () => opening, logger: silent };
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
    expect(published).toEqual([{ id: 'm-1', leaving: true, count: 4 }]);
  });

  it('sends an announcement begun before the leave first, then the leave, in that order', async () => {
    const { published, openChannel, members } = membership();
    const alive = members.announce(); // waits for the channel, as a start's first announcement does
    const leaving = members.announce(true);
    openChannel();
    await Promise.all([alive, leaving]);
    expect(published).toEqual([
      { id: 'm-1', leaving: false, count: 4 },
      { id: 'm-1', leaving: true, count: 4 },
    ]);
  });
});
