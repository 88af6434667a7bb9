import type { Channel, ConsumeMessage } from 'amqplib';
import type { AmqpConnection } from '../amqp/amqp.connection.js';
import { encodeControl, type ControlCommand } from '../core/breaker/control.message.js';
import { encodeHandOverNote, HAND_OVER_NOTE_TYPE, type HandOverNote } from '../core/delivery/hand-over.note.js';
import { ControlListener } from './control.listener.js';
import type { QueueFlowStatus } from './queue-flow.control.js';

/** A listener of broker user "app" on `orders`: `deliver` hands it a message as its control queue would. */
async function listener(controlUsers?: string[], users = ['app']) {
  const warnings: string[] = [];
  const acted: Array<[ControlCommand, string]> = [];
  const notes: HandOverNote[] = [];
  const answers: string[] = [];
  let consumer!: (message: ConsumeMessage | null) => void;
  const channel = {
    on: () => channel,
    assertExchange: async () => undefined,
    assertQueue: async () => ({ queue: 'amq.gen-control' }),
    bindQueue: async () => undefined,
    consume: async (_queue: string, onMessage: typeof consumer) => void (consumer = onMessage),
  } as unknown as Channel;
  const control = new ControlListener({
    connection: { createChannel: async () => channel } as unknown as AmqpConnection,
    logger: { log: () => undefined, warn: (line: string) => void warnings.push(line), error: () => undefined, debug: () => undefined },
    instance: 'host pid 1',
    users,
    controlUsers,
    act: (command, sender) => {
      acted.push([command, sender]);
      return { queue: command.queue, state: 'paused' } as QueueFlowStatus;
    },
    reply: async (_to, _id, body) => void answers.push(body.toString()),
    handedOver: (note) => void notes.push(note),
  });
  await control.start(['orders']);
  const deliver = (content: Buffer, properties: { userId?: string; type?: string }) =>
    consumer({
      content,
      fields: { routingKey: 'orders' },
      properties: { replyTo: 'amq.rabbitmq.reply-to.x', ...properties },
    } as unknown as ConsumeMessage);
  return { deliver, warnings, acted, notes, answers };
}

const pause = encodeControl({ command: 'pause', queue: 'orders', by: 'alice (on-call)' });
const note = encodeHandOverNote({ queue: 'orders', returns: [['id:a', 1]] });

describe('ControlListener senders', () => {
  it('takes a command only with a broker-validated userId, and hands on that user, not the one the body claims', async () => {
    const { deliver, warnings, acted, answers } = await listener();
    deliver(pause, {}); // an older sender, or one made by hand
    expect(acted).toEqual([]);
    expect(warnings).toEqual([expect.stringContaining('Ignored a control message for "orders" without a broker-validated user')]);
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
    deliver(note, { type: HAND_OVER_NOTE_TYPE, userId: 'ops' });
    deliver(note, { type: HAND_OVER_NOTE_TYPE });
    expect(notes).toEqual([]);
    deliver(note, { type: HAND_OVER_NOTE_TYPE, userId: 'app' });
    expect(notes).toHaveLength(1);
    expect(warnings).toEqual([expect.stringContaining('Ignored a hand-over note for "orders" from broker user "ops"')]);
  });

  it('takes notes from any of the users of its URLs: an instance that failed over to a node of another user sends as that one', async () => {
    const { deliver, notes } = await listener(['ops'], ['app', 'app-eu']);
    deliver(note, { type: HAND_OVER_NOTE_TYPE, userId: 'app-eu' });
    deliver(note, { type: HAND_OVER_NOTE_TYPE, userId: 'app' });
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
