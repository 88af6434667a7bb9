import type { Channel, ConsumeMessage } from 'amqplib';
import type { AmqpConnection } from '../amqp/amqp.connection.js';
import { CONTROL_EXCHANGE, encodeControl } from '../core/breaker/control.message.js';
import { encodeHandOverNote, HAND_OVER_NOTE_TYPE, type HandOverNote } from '../core/delivery/hand-over.note.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { ControlSide, type ControlSideDeps } from './control.side.js';
import type { Outgoing } from './publishing.side.js';
import type { QueueFlowControl, QueueFlowStatus } from './queue-flow.control.js';

/** A consuming connection whose control channel declares CONTROL_EXCHANGE, or is refused it (`refused`). */
function connectionFor(refused: boolean): { connection: AmqpConnection } {
  const channel = {
    on: () => undefined,
    assertExchange: async () => {
      if (refused) throw Object.assign(new Error('ACCESS_REFUSED - access to exchange amqp-retry.control refused'), { code: 403 });
      return { exchange: CONTROL_EXCHANGE };
    },
    assertQueue: async () => ({ queue: 'amq.gen-control' }),
    bindQueue: async () => ({}),
    consume: async () => ({ consumerTag: 'c' }),
    close: async () => undefined,
  };
  const connection = { createChannel: async () => channel as unknown as Channel } as unknown as AmqpConnection;
  return { connection };
}

function sideWith(published: Outgoing[], warnings: string[]): ControlSide {
  const logger = { log: () => undefined, warn: (line: string) => warnings.push(line), error: () => undefined } as unknown as RetryLogger;
  return new ControlSide({
    config: { urls: ['amqp://app:secret@localhost'], application: undefined, controlUsers: undefined },
    logger,
    flowOf: () => {
      throw new RangeError('none');
    },
    handedOver: () => undefined,
    publishing: {
      publish: async (_via: unknown, out: Outgoing) => void published.push(out),
      channel: async () => {
        throw new Error('not used');
      },
      user: 'app',
    } as unknown as ControlSideDeps['publishing'],
    replyAddresses: { state: async () => ({ kind: 'gone' }) },
  });
}

const note = { queue: 'orders', returns: [['id:a', 1] as const] as Array<[string, number]> };

describe('ControlSide listening again', () => {
  it('keeps no channel of a connection it stopped listening on while that channel opened', async () => {
    const opened: string[] = [];
    const consumed: string[] = [];
    const closed: string[] = [];
    const connectionNamed = (name: string, openMs: number): AmqpConnection => {
      let channels = 0;
      const createChannel = async () => {
        const id = `${name}#${++channels}`;
        await new Promise((resolve) => setTimeout(resolve, openMs));
        opened.push(id);
        const channel = connectionFor(false).connection.createChannel as unknown as () => Promise<Channel>;
        return Object.assign(await channel(), { consume: async () => void consumed.push(id), close: async () => void closed.push(id) });
      };
      return { createChannel } as unknown as AmqpConnection;
    };
    const side = sideWith([], []);
    const first = side.listen(connectionNamed('c1', 30), ['orders']);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await side.stop();
    await side.listen(connectionNamed('c2', 1), ['orders']);
    await first;
    expect(opened).toEqual(['c1#1', 'c2#1']);
    expect(consumed).toEqual(['c2#1']); // the stopped connection's channel took no commands
    expect(closed).toEqual(['c1#1']);
  });
});

describe('ControlSide hand-over notes', () => {
  it('publishes a note once its listener declared the control exchange', async () => {
    const published: Outgoing[] = [];
    const side = sideWith(published, []);
    await side.listen(connectionFor(false).connection, ['orders']);
    await side.announceReturns(note);
    expect(published.map((out) => [out.exchange, out.routingKey])).toEqual([[CONTROL_EXCHANGE, 'orders']]);
  });

  it('sends its notes with its broker user as userId, which the broker checks', async () => {
    const published: Outgoing[] = [];
    const side = sideWith(published, []);
    await side.listen(connectionFor(false).connection, ['orders']);
    await side.announceReturns(note);
    expect(published.map((out) => out.properties?.userId)).toEqual(['app']);
  });

  it('publishes no note when the control exchange could not be declared: a 404 would close the publisher channel', async () => {
    const published: Outgoing[] = [];
    const warnings: string[] = [];
    const side = sideWith(published, warnings);
    await side.listen(connectionFor(true).connection, ['orders']);
    await side.announceReturns(note);
    await side.announceReturns(note);
    expect(published).toEqual([]);
    expect(warnings.filter((line) => line.includes('without a note'))).toHaveLength(1); // told once
  });

  it('publishes no note before its listener starts, and still does once it stopped: a stopping application hands over last', async () => {
    const published: Outgoing[] = [];
    const side = sideWith(published, []);
    await side.announceReturns(note);
    expect(published).toEqual([]);
    await side.listen(connectionFor(false).connection, ['orders']);
    await side.stop();
    await side.announceReturns(note);
    expect(published).toHaveLength(1);
  });

  it('starts its listener again after a reconnection without rejecting when the control channel cannot open', async () => {
    const warnings: string[] = [];
    const side = sideWith([], warnings);
    let opens = 0;
    const { connection } = connectionFor(false);
    const failing = {
      createChannel: async () => {
        if (++opens > 1) throw new Error('connection closed');
        return connection.createChannel('control commands', true);
      },
    } as unknown as AmqpConnection;
    await side.listen(failing, ['orders']);
    await expect(side.restart(['orders'])).resolves.toBeUndefined();
    expect(warnings.some((line) => line.includes('connection closed'))).toBe(true);
  });
});

/** The listener of a control side of broker user "app" on `orders`: `deliver` hands it a message as its control queue would. */
async function listener(controlUsers?: string[], users = ['app']) {
  const warnings: string[] = [];
  const acted: Array<[string, string | undefined]> = [];
  const notes: HandOverNote[] = [];
  const answers: string[] = [];
  let consumer!: (message: ConsumeMessage | null) => void;
  const channel = {
    on: () => channel,
    assertExchange: async () => undefined,
    assertQueue: async () => ({ queue: 'amq.gen-control' }),
    bindQueue: async () => undefined,
    consume: async (_queue: string, onMessage: typeof consumer) => void (consumer = onMessage),
    publish: (_exchange: string, _to: string, body: Buffer) => void answers.push(body.toString()),
  } as unknown as Channel;
  const flow = (queue: string) => ({
    pause: (_by: string, _reason: string | undefined, sender?: string) => {
      acted.push([queue, sender]);
      return { queue, state: 'paused' } as QueueFlowStatus;
    },
  });
  const control = new ControlSide({
    config: { urls: users.map((user) => `amqp://${user}:secret@localhost`), application: undefined, controlUsers },
    logger: { log: () => undefined, warn: (line: string) => void warnings.push(line), error: () => undefined, debug: () => undefined },
    flowOf: (queue) => flow(queue) as unknown as QueueFlowControl,
    handedOver: (note) => void notes.push(note),
    publishing: { channel: async () => channel, user: users[0] } as unknown as ControlSideDeps['publishing'],
    replyAddresses: { state: async () => ({ kind: 'exists' }) },
  });
  await control.listen({ createChannel: async () => channel } as unknown as AmqpConnection, ['orders']);
  const deliver = (content: Buffer, properties: { userId?: string; type?: string }) =>
    consumer({
      content,
      fields: { routingKey: 'orders' },
      properties: { replyTo: 'amq.rabbitmq.reply-to.x', ...properties },
    } as unknown as ConsumeMessage);
  return { deliver, warnings, acted, notes, answers };
}

const pause = encodeControl({ command: 'pause', queue: 'orders', by: 'alice (on-call)' });
const encodedNote = encodeHandOverNote({ queue: 'orders', returns: [['id:a', 1]] });

describe('ControlSide senders', () => {
  it('takes a command only with a broker-validated userId, and hands on that user, not the one the body claims', async () => {
    const { deliver, warnings, acted, answers } = await listener();
    deliver(pause, {}); // an older sender, or one made by hand
    expect(acted).toEqual([]);
    expect(warnings).toEqual([expect.stringContaining('Ignored a control message for "orders" without a broker-validated user')]);
    await new Promise((resolve) => setImmediate(resolve)); // the answer goes once its address is checked
    expect(answers[0]).toContain('sent without userId');
    deliver(pause, { userId: 'ops' }); // the documented operator user of the CLI: any user by default
    deliver(pause, { userId: 'app' });
    expect(acted.map(([, sender]) => sender)).toEqual(['ops', 'app']);
  });

  it("with controlUsers, ignores any other user's command, naming that user and the option", async () => {
    const { deliver, warnings, acted } = await listener(['ops']);
    deliver(pause, { userId: 'mallory' });
    deliver(pause, { userId: 'ops' });
    deliver(pause, { userId: 'app' });
    expect(acted.map(([, sender]) => sender)).toEqual(['ops', 'app']);
    expect(warnings).toEqual([expect.stringMatching(/from broker user "mallory".*"controlUsers"; add it there/)]);
  });

  it("takes hand-over notes from the application's own user only", async () => {
    const { deliver, warnings, notes } = await listener(['ops']);
    deliver(encodedNote, { type: HAND_OVER_NOTE_TYPE, userId: 'ops' });
    deliver(encodedNote, { type: HAND_OVER_NOTE_TYPE });
    expect(notes).toEqual([]);
    deliver(encodedNote, { type: HAND_OVER_NOTE_TYPE, userId: 'app' });
    expect(notes).toHaveLength(1);
    expect(warnings).toEqual([expect.stringContaining('Ignored a hand-over note for "orders" from broker user "ops"')]);
  });

  it('takes notes from any of the users of its URLs: an instance that failed over to a node of another user sends as that one', async () => {
    const { deliver, notes } = await listener(['ops'], ['app', 'app-eu']);
    deliver(encodedNote, { type: HAND_OVER_NOTE_TYPE, userId: 'app-eu' });
    deliver(encodedNote, { type: HAND_OVER_NOTE_TYPE, userId: 'app' });
    expect(notes).toHaveLength(2);
  });

  it('logs at most one line a minute for each kind of ignored message, whatever the flood', async () => {
    const { deliver, warnings } = await listener(['ops']);
    for (let i = 0; i < 1_000; i++) {
      deliver(Buffer.from('not json'), { userId: 'app' });
      deliver(pause, { userId: 'mallory' });
      deliver(pause, {});
    }
    expect(warnings).toHaveLength(3);
    expect(warnings[0]).toContain('from broker user "app"');
  });
});
