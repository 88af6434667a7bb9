import { EventEmitter } from 'node:events';
import type { AmqpConnection } from './amqp.connection.js';
import { ConfirmPublisher } from './confirm.publisher.js';
import type { PublishError } from '../errors/publish.error.js';

type Callback = (error: unknown) => void;

/** What a fake channel answers a publish: an error (a nack), undefined (an ack), or 'hold' (no answer until `held` is called). */
type Answer = Error | undefined | 'hold';

/** A confirm channel that answers every publish with `answer` (undefined: an ack) on the next turn. */
class FakeChannel extends EventEmitter {
  readonly published: string[] = [];
  /** The callbacks of the publishes answered 'hold'. */
  readonly held: Callback[] = [];
  closed = false;

  constructor(private readonly answer: () => Answer) {
    super();
  }

  publish(_exchange: string, routingKey: string, _content: Buffer, _options: unknown, callback: Callback): boolean {
    this.published.push(routingKey);
    const answer = this.answer();
    if (answer === 'hold') this.held.push(callback);
    else setImmediate(() => callback(answer));
    return true;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.emit('close');
    for (const callback of this.held.splice(0)) callback(new Error('channel closed')); // as amqplib fails what it did not confirm
  }
}

/** A connection that is up and hands out the channels of `answers`, one per createConfirmChannel. */
function connectionWith(answers: (() => Answer)[]) {
  const channels: FakeChannel[] = [];
  const connection = {
    isConnected: true,
    createConfirmChannel: async () => {
      const channel = new FakeChannel(answers[channels.length] ?? (() => undefined));
      channels.push(channel);
      return channel;
    },
  } as unknown as AmqpConnection;
  return { connection, channels };
}

const limits = { timeoutMs: 2_000, bufferSize: 10, confirmTimeoutMs: 500 };

describe('ConfirmPublisher after a nack', () => {
  const nack = () => new Error('message nacked');
  const waitUntil = async (done: () => boolean, ms: number) => {
    const deadline = Date.now() + ms;
    while (!done() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  };

  it('rejects the nacked publish and sends the next one on a fresh channel, closing the old one once nothing on it awaits a confirm', async () => {
    // 3.10: a channel that first published to a quorum queue during its leader election nacks every later publish.
    const { connection, channels } = connectionWith([nack, () => undefined]);
    const publisher = new ConfirmPublisher(connection, limits);
    await expect(publisher.publish('', 'q', Buffer.from('1'), { mandatory: false })).rejects.toThrow('the broker nacked it');
    await publisher.publish('', 'q', Buffer.from('2'), { mandatory: false });
    expect(channels.map((channel) => channel.published)).toEqual([['q'], ['q']]);
    expect(channels[0].closed).toBe(true); // its only publish has settled
    expect(channels[1].closed).toBe(false);
    await publisher.close();
  });

  it('sends again a publish amqplib refused because its channel or connection was closing, rather than fail it for good', async () => {
    // amqplib's invalidateSend: a publish between a close's start and its 'close' event throws "Channel closing" or
    // "Connection closing"; an outbox row failed for good over it would be parked.
    for (const text of ['Channel closing', 'Connection closing']) {
      const { connection, channels } = connectionWith([
        () => {
          setImmediate(() => void channels[0].close());
          throw new Error(text);
        },
        () => undefined,
      ]);
      const publisher = new ConfirmPublisher(connection, limits);
      await publisher.publish('', 'q', Buffer.from('1'), { mandatory: false });
      expect(channels.map((channel) => channel.published)).toEqual([['q'], ['q']]);
      await publisher.close();
    }
  });

  it('keeps a retired channel open while a send on it awaits its confirm, and closes it once that one settled', async () => {
    let sends = 0;
    const { connection, channels } = connectionWith([() => (++sends === 1 ? 'hold' : nack()), () => undefined]);
    const publisher = new ConfirmPublisher(connection, { ...limits, confirmTimeoutMs: 60_000 });
    const first = publisher.publish('', 'q', Buffer.from('1'), { mandatory: false });
    await expect(publisher.publish('', 'q', Buffer.from('2'), { mandatory: false })).rejects.toThrow('the broker nacked it');
    await publisher.publish('', 'q', Buffer.from('3'), { mandatory: false }); // on a fresh channel
    expect(channels).toHaveLength(2);
    expect(channels[0].closed).toBe(false); // publish 1 still awaits its confirm there
    channels[0].held[0](undefined);
    await first;
    expect(channels[0].closed).toBe(true); // at once, not after confirmTimeout (a minute here)
    await publisher.close();
  });

  /** The publishes of `routingKey` over all channels: the copies the broker may have routed. */
  const copiesOf = (channels: FakeChannel[], routingKey: string) =>
    channels.flatMap((channel) => channel.published).filter((key) => key === routingKey).length;
  const openChannels = (channels: FakeChannel[]) => channels.filter((channel) => !channel.closed).length;

  it('keeps a retired channel open past confirmTimeout while a patient send on it awaits its confirm, and sends no second copy', async () => {
    let sends = 0;
    const { connection, channels } = connectionWith([() => (++sends === 1 ? 'hold' : nack()), () => undefined]);
    const publisher = new ConfirmPublisher(connection, { ...limits, confirmTimeoutMs: 100 });
    const slow: number[] = [];
    const patience = { signal: new AbortController().signal, onSlowConfirm: (waitedMs: number) => slow.push(waitedMs) }; // a parked copy
    const parked = publisher.publish('', 'parked', Buffer.from('1'), { mandatory: false }, patience);
    await expect(publisher.publish('', 'q', Buffer.from('2'), { mandatory: false })).rejects.toThrow('the broker nacked it');
    await publisher.publish('', 'q', Buffer.from('3'), { mandatory: false }); // on a fresh channel
    // The close (and the copy sent again on the fresh channel) would come at confirmTimeout: 100 ms here.
    await waitUntil(() => channels[0].closed || slow.length >= 3, 3_000);
    await waitUntil(() => copiesOf(channels, 'parked') > 1, 100); // a second copy on the fresh channel, if one goes
    expect(copiesOf(channels, 'parked')).toBe(1);
    expect(channels[0].closed).toBe(false);
    expect(slow.length).toBeGreaterThanOrEqual(3); // waited three confirmTimeouts, and on
    expect(openChannels(channels)).toBe(2);
    channels[0].held[0](undefined); // the broker confirms the first copy at last
    await parked;
    expect(copiesOf(channels, 'parked')).toBe(1);
    expect(channels[0].closed).toBe(true); // idle: closed at once
    expect(openChannels(channels)).toBe(1); // the one in use, no retired one left behind
    await publisher.close();
  });

  it("closes a retired channel at a patient send's own deadline (its signal aborts), and sends no second copy", async () => {
    let sends = 0;
    const { connection, channels } = connectionWith([() => (++sends === 1 ? 'hold' : nack()), () => undefined]);
    const publisher = new ConfirmPublisher(connection, { ...limits, confirmTimeoutMs: 100 });
    const abort = new AbortController();
    const parked = publisher.publish('', 'parked', Buffer.from('1'), { mandatory: false }, { signal: abort.signal, onSlowConfirm: () => undefined });
    await expect(publisher.publish('', 'q', Buffer.from('2'), { mandatory: false })).rejects.toThrow('the broker nacked it');
    await publisher.publish('', 'q', Buffer.from('3'), { mandatory: false });
    await new Promise((resolve) => setTimeout(resolve, 300)); // past confirmTimeout
    expect(channels[0].closed).toBe(false);
    abort.abort(new Error('the delivery is gone'));
    await expect(parked).rejects.toThrow('given up before the broker confirmed it (the delivery is gone); it may or may not have been delivered');
    expect(channels[0].closed).toBe(true);
    expect(copiesOf(channels, 'parked')).toBe(1);
    expect(openChannels(channels)).toBe(1);
    await publisher.close();
  });

  it('closes a retired channel once its last impatient send times out at confirmTimeout', async () => {
    let sends = 0;
    const { connection, channels } = connectionWith([() => (++sends === 1 ? 'hold' : nack()), () => undefined]);
    const publisher = new ConfirmPublisher(connection, { ...limits, confirmTimeoutMs: 100 });
    const first = publisher.publish('', 'q', Buffer.from('1'), { mandatory: false });
    await expect(publisher.publish('', 'q', Buffer.from('2'), { mandatory: false })).rejects.toThrow('the broker nacked it');
    await expect(first).rejects.toThrow('did not confirm it within 100 ms');
    expect(channels[0].closed).toBe(true);
    expect(channels).toHaveLength(1); // not sent again
    await publisher.close();
  });

  it('closes a retired channel that still awaits a patient confirm when the publisher closes', async () => {
    let sends = 0;
    const { connection, channels } = connectionWith([() => (++sends === 1 ? 'hold' : nack()), () => undefined]);
    const publisher = new ConfirmPublisher(connection, { ...limits, confirmTimeoutMs: 100 });
    const patience = { signal: new AbortController().signal, onSlowConfirm: () => undefined };
    const parked = publisher.publish('', 'parked', Buffer.from('1'), { mandatory: false }, patience);
    await expect(publisher.publish('', 'q', Buffer.from('2'), { mandatory: false })).rejects.toThrow('the broker nacked it');
    await publisher.close(); // after confirmTimeout (100 ms here) without the confirm
    expect(channels[0].closed).toBe(true);
    await expect(parked).rejects.toThrow('the publisher closed before the broker confirmed it');
    await expect(parked).rejects.toThrow('it may or may not have been delivered');
    expect(copiesOf(channels, 'parked')).toBe(1);
  });

  it('retires at most one channel a second under a stream of nacks (a queue at its length limit), not one per nack', async () => {
    const { connection, channels } = connectionWith([nack, nack, nack, nack]);
    const publisher = new ConfirmPublisher(connection, { ...limits, confirmTimeoutMs: 60_000 });
    for (let n = 0; n < 200; n++) await expect(publisher.publish('', 'q', Buffer.from(String(n)), { mandatory: false })).rejects.toThrow('nacked');
    expect(channels).toHaveLength(2); // the first retired after its first nack; its successor nacks within the second
    expect(channels[0].closed).toBe(true);
    expect(channels[1].published).toHaveLength(199);
    await publisher.close();
  });

  it('keeps using a channel that confirms', async () => {
    const { connection, channels } = connectionWith([() => undefined]);
    const publisher = new ConfirmPublisher(connection, limits);
    for (const n of [1, 2, 3]) await publisher.publish('', 'q', Buffer.from(String(n)), { mandatory: false });
    expect(channels).toHaveLength(1);
    await publisher.close();
  });
});

describe('ConfirmPublisher.close()', () => {
  const outcome = (publishing: Promise<void>) =>
    publishing.then(
      () => 'confirmed',
      (error: Error) => error.message,
    );

  it('lets the sends made get their confirm or nack before the channel closes; a publish after the close is not sent', async () => {
    const { connection, channels } = connectionWith([() => 'hold']);
    const publisher = new ConfirmPublisher(connection, { ...limits, confirmTimeoutMs: 60_000 });
    const sent = [1, 2, 3].map((n) => outcome(publisher.publish('', `q${n}`, Buffer.from(String(n)), { mandatory: false })));
    await new Promise((resolve) => setImmediate(resolve)); // the channel opened, the three are written
    const closing = publisher.close();
    const late = outcome(publisher.publish('', 'late', Buffer.from('4'), { mandatory: false }));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(channels[0].closed).toBe(false); // three sends await the broker's answer
    const [one, two, three] = channels[0].held;
    one(undefined);
    two(new Error('message nacked'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(channels[0].closed).toBe(false);
    three(undefined);
    await closing;
    expect(channels[0].closed).toBe(true);
    expect(await Promise.all(sent)).toEqual(['confirmed', expect.stringContaining('the broker nacked it'), 'confirmed']);
    expect(await late).toContain('the publisher is closed (the application is shutting down)');
    expect(channels[0].published).toEqual(['q1', 'q2', 'q3']);
  });

  it('waits at most confirmTimeout: a send still unanswered then rejects saying it may have been delivered', async () => {
    const { connection, channels } = connectionWith([() => 'hold']);
    const publisher = new ConfirmPublisher(connection, { ...limits, confirmTimeoutMs: 200 });
    // A patient send (a parked copy) waits past its confirmTimeout: only the close's bound ends it.
    const patience = { signal: new AbortController().signal, onSlowConfirm: () => undefined };
    const parked = outcome(publisher.publish('', 'parked', Buffer.from('1'), { mandatory: false }, patience));
    await new Promise((resolve) => setTimeout(resolve, 150));
    const startedAt = Date.now();
    await publisher.close();
    const closeMs = Date.now() - startedAt;
    expect(closeMs).toBeGreaterThanOrEqual(150);
    expect(closeMs).toBeLessThan(1_000);
    expect(await parked).toMatch(/the publisher closed before the broker confirmed it .*; it may or may not have been delivered$/);
    expect(channels[0].closed).toBe(true);
    expect(channels[0].published).toEqual(['parked']);
  });

  it('does not send again a publish whose channel closed while the publisher closed, and says it may have been delivered', async () => {
    const { connection, channels } = connectionWith([() => 'hold', () => undefined]);
    const publisher = new ConfirmPublisher(connection, { ...limits, confirmTimeoutMs: 60_000 });
    const sent = outcome(publisher.publish('', 'q', Buffer.from('1'), { mandatory: false }));
    await new Promise((resolve) => setImmediate(resolve));
    const closing = publisher.close();
    await channels[0].close(); // the connection lost under it
    await closing;
    expect(await sent).toMatch(
      /^.*the channel closed before the broker confirmed it .*; then the publisher is closed .*; it may or may not have been delivered$/,
    );
    expect(channels).toHaveLength(1);
  });

  it('ends at once when no send awaits an answer', async () => {
    const { connection, channels } = connectionWith([() => undefined]);
    const publisher = new ConfirmPublisher(connection, { ...limits, confirmTimeoutMs: 60_000 });
    await publisher.publish('', 'q', Buffer.from('1'), { mandatory: false });
    const startedAt = Date.now();
    await publisher.close();
    expect(Date.now() - startedAt).toBeLessThan(100);
    expect(channels[0].closed).toBe(true);
  });
});

/**
 * A connection whose first channel open is cut by a loss of the connection ("Channel ended"), as amqplib's is when the
 * socket closes under it; AmqpConnection reconnects after `downMs`. Counts the opens and the waits for the connection.
 */
function droppedDuringOpen(downMs: number) {
  const calls = { opens: 0, waits: 0 };
  let up = true;
  const reconnected: Array<() => void> = [];
  const connection = {
    get isConnected() {
      return up;
    },
    whenConnected: (timeoutMs: number) => {
      calls.waits++;
      if (up) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        reconnected.push(resolve);
        setTimeout(() => reject(new Error(`no connection to RabbitMQ within ${timeoutMs} ms`)), timeoutMs);
      });
    },
    createConfirmChannel: async () => {
      if (++calls.opens > 1) return new FakeChannel(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 20));
      up = false;
      setTimeout(() => ((up = true), reconnected.splice(0).forEach((resolve) => resolve())), downMs);
      throw new Error('Channel ended, no reply will be forthcoming');
    },
  } as unknown as AmqpConnection;
  return { connection, calls };
}

describe('ConfirmPublisher when the connection drops while its channel opens', () => {
  it('waits for the connection and sends the publish once it is back', async () => {
    const { connection, calls } = droppedDuringOpen(50);
    const publisher = new ConfirmPublisher(connection, limits);
    await expect(publisher.publish('', 'q', Buffer.from('x'), { mandatory: false })).resolves.toBeUndefined();
    expect(calls).toEqual({ opens: 2, waits: 1 });
    await publisher.close();
  });

  it('fails with the connection wait when the connection stays down past publishTimeout', async () => {
    const { connection, calls } = droppedDuringOpen(5_000);
    const publisher = new ConfirmPublisher(connection, { ...limits, timeoutMs: 300 });
    const startedAt = Date.now();
    await expect(publisher.publish('', 'q', Buffer.from('x'), { mandatory: false })).rejects.toThrow(/no connection to RabbitMQ within/);
    expect(Date.now() - startedAt).toBeLessThan(1_000);
    expect(calls.opens).toBe(1);
  });

  it('counts the wait against publishBufferSize', async () => {
    const { connection } = droppedDuringOpen(50);
    const publisher = new ConfirmPublisher(connection, { ...limits, bufferSize: 0 });
    await expect(publisher.publish('', 'q', Buffer.from('x'), { mandatory: false })).rejects.toThrow(/publishBufferSize/);
  });

  it('opens nothing more when the publisher closed while the publish waited', async () => {
    const { connection, calls } = droppedDuringOpen(100);
    const publisher = new ConfirmPublisher(connection, limits);
    const publishing = publisher.publish('', 'q', Buffer.from('x'), { mandatory: false });
    await new Promise((resolve) => setTimeout(resolve, 50)); // the open failed; the publish waits for the connection
    await publisher.close();
    await expect(publishing).rejects.toThrow('the publisher is closed');
    expect(calls.opens).toBe(1);
  });
});

describe("ConfirmPublisher with its caller's deadline", () => {
  /** How long `publishing` took to settle, and its error. */
  const settled = async (publishing: Promise<void>) => {
    const startedAt = Date.now();
    const error = await publishing.then(
      () => undefined,
      (failure: PublishError) => failure,
    );
    return { ms: Date.now() - startedAt, error };
  };

  it('ends the wait for the connection at the deadline given, not publishTimeout from the call', async () => {
    const { connection } = droppedDuringOpen(5_000);
    const publisher = new ConfirmPublisher(connection, { ...limits, timeoutMs: 2_000 });
    const { ms, error } = await settled(publisher.publish('', 'q', Buffer.from('x'), { mandatory: false }, undefined, Date.now() + 300));
    expect(error?.message).toMatch(/no connection to RabbitMQ within/);
    expect(ms).toBeLessThan(1_000);
  });

  it('ends the wait for a channel the broker never opens at the deadline given', async () => {
    const connection = { isConnected: true, createConfirmChannel: () => new Promise(() => undefined) } as unknown as AmqpConnection;
    const publisher = new ConfirmPublisher(connection, { ...limits, timeoutMs: 2_000 });
    const { ms, error } = await settled(publisher.publish('', 'q', Buffer.from('x'), { mandatory: false }, undefined, Date.now() + 300));
    expect(error?.message).toMatch(/no channel could be opened/);
    expect(ms).toBeLessThan(1_000);
  });

  it('sends at once on an open channel, whatever the deadline', async () => {
    const { connection, channels } = connectionWith([() => undefined]);
    const publisher = new ConfirmPublisher(connection, limits);
    await publisher.publish('', 'q', Buffer.from('1'), { mandatory: false });
    await publisher.publish('', 'q', Buffer.from('2'), { mandatory: false }, undefined, Date.now() - 1);
    expect(channels.map((channel) => channel.published)).toEqual([['q', 'q']]);
    await publisher.close();
  });
});

/**
 * A confirm channel that behaves as amqplib's where it matters here: publish() answers false once `room` messages wait
 * to be written (they are, and 'drain' follows, on flush()); confirms come on confirmAll(); a close first fails every
 * unconfirmed publish from amqplib's own 'close' listener (registered before any of ours), and publish() then throws.
 */
class AmqplibLikeChannel extends EventEmitter {
  readonly published: string[] = [];
  private unconfirmed: Callback[] = [];
  private buffered = 0;
  isClosed = false;

  constructor(private readonly room = Infinity) {
    super();
    this.on('close', () => {
      const failing = this.unconfirmed;
      this.unconfirmed = [];
      for (const callback of failing) callback(new Error('channel closed'));
    });
  }

  publish(_exchange: string, routingKey: string, _content: Buffer, _options: unknown, callback: Callback): boolean {
    if (this.isClosed) throw new Error('Channel closed');
    this.published.push(routingKey);
    this.unconfirmed.push(callback);
    return ++this.buffered < this.room;
  }

  flush(): void {
    this.buffered = 0;
    this.emit('drain');
  }

  /** The broker nacks the oldest unconfirmed publish. */
  nackOldest(): void {
    this.unconfirmed.shift()?.(new Error('message nacked'));
  }

  confirmAll(): void {
    const confirmed = this.unconfirmed;
    this.unconfirmed = [];
    for (const callback of confirmed) callback(undefined);
  }

  /** The broker closes it: with a 404 naming `exchange`, or (no exchange) as a lost connection does. */
  shut(exchange?: string): void {
    if (exchange)
      this.emit(
        'error',
        Object.assign(new Error(`Channel closed by server: 404 (NOT-FOUND) with message "NOT_FOUND - no exchange '${exchange}' in vhost '/'"`), {
          code: 404,
        }),
      );
    this.isClosed = true;
    this.emit('close');
  }

  async close(): Promise<void> {
    if (!this.isClosed) this.shut();
  }
}

function amqplibLike(room = Infinity) {
  const channels: AmqplibLikeChannel[] = [];
  const connection = {
    isConnected: true,
    createConfirmChannel: async () => {
      const channel = new AmqplibLikeChannel(room);
      channels.push(channel);
      return channel;
    },
  } as unknown as AmqpConnection;
  return { connection, channels };
}

const settled = (promises: Array<Promise<void>>) =>
  Promise.allSettled(promises).then((results) => results.map((r) => (r.status === 'fulfilled' ? 'ok' : String((r.reason as Error).message))));
const until = async (done: () => boolean) => {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((resolve) => setImmediate(resolve));
};

describe('ConfirmPublisher on a channel that closes, fills and drains as amqplib does', () => {
  it('sends what a lost channel held again on a fresh channel, not against the dead one', async () => {
    const { connection, channels } = amqplibLike();
    const publisher = new ConfirmPublisher(connection, limits);
    const publishes = [1, 2, 3].map((n) => publisher.publish('', `q${n}`, Buffer.from(String(n))));
    await until(() => channels[0]?.published.length === 3);
    channels[0].shut(); // as a lost connection does
    await until(() => channels[1]?.published.length === 3);
    channels[1].confirmAll();
    expect(await settled(publishes)).toEqual(['ok', 'ok', 'ok']);
    expect(channels.map((channel) => channel.published)).toEqual([
      ['q1', 'q2', 'q3'],
      ['q1', 'q2', 'q3'],
    ]);
    await publisher.close();
  });

  it('fails only the publish a 404 names; its neighbours go again on a fresh channel (no recursion on the dead one)', async () => {
    const { connection, channels } = amqplibLike();
    const publisher = new ConfirmPublisher(connection, limits);
    const bad = publisher.publish('gone', 'k', Buffer.from('x'));
    const good = [1, 2].map((n) => publisher.publish('', `q${n}`, Buffer.from(String(n))));
    const outcomes = settled([bad, ...good]);
    await until(() => channels[0]?.published.length === 3);
    channels[0].shut('gone');
    await until(() => channels[1]?.published.length === 2);
    channels[1].confirmAll();
    expect(await outcomes).toEqual([expect.stringContaining("no exchange 'gone'"), 'ok', 'ok']);
    await publisher.close();
  });

  it("gives a neighbour up at its deadline without the 404's code: the refusal was another publish's, not its own", async () => {
    const { connection, channels } = amqplibLike();
    const publisher = new ConfirmPublisher(connection, { ...limits, timeoutMs: 50 });
    const bad = publisher.publish('gone', 'k', Buffer.from('x'));
    const good = publisher.publish('', 'q', Buffer.from('1'));
    const outcomes = Promise.allSettled([bad, good]);
    await until(() => channels[0]?.published.length === 2);
    await new Promise((resolve) => setTimeout(resolve, 80)); // past the good publish's deadline
    channels[0].shut('gone');
    const [badResult, goodResult] = await outcomes;
    expect(badResult.status === 'rejected' && (badResult.reason as PublishError).brokerCode).toBe(404);
    expect(goodResult.status).toBe('rejected');
    const error = (goodResult as PromiseRejectedResult).reason as PublishError;
    expect(error.message).toContain('the channel closed before the broker confirmed it');
    expect(error.brokerCode).toBeUndefined(); // an outbox row or a delayed message is then tried again, not parked as refused
    await publisher.close();
  });

  it('lets a flood through a buffer of 100 one drain at a time, in order, and settles every publish', async () => {
    const { connection, channels } = amqplibLike(100);
    // Its confirms come at the end, after 200 drains: limits that a loaded machine cannot reach (the test is of order).
    const publisher = new ConfirmPublisher(connection, { ...limits, timeoutMs: 120_000, confirmTimeoutMs: 120_000 });
    const first = publisher.publish('', 'q', Buffer.from('0'));
    await until(() => channels[0]?.published.length === 1);
    const flood = Array.from({ length: 20_000 }, (_, n) => publisher.publish('', `q${n}`, Buffer.from(String(n))));
    let drains = 0;
    while (channels[0].published.length < 20_001 && drains < 1_000) {
      expect(channels[0].published.length - 1).toBeLessThanOrEqual((drains + 1) * 100); // never past a full buffer
      channels[0].flush();
      drains++;
      await new Promise((resolve) => setImmediate(resolve));
    }
    channels[0].confirmAll();
    const outcomes = await settled([first, ...flood]);
    expect(outcomes.filter((o) => o !== 'ok')).toEqual([]);
    expect(channels[0].published.slice(0, 3)).toEqual(['q', 'q0', 'q1']);
    expect(drains).toBeGreaterThanOrEqual(199);
    await publisher.close();
  });

  it('lets the line go on past a patient publish whose signal aborted while it waited', async () => {
    const { connection, channels } = amqplibLike(1);
    const publisher = new ConfirmPublisher(connection, limits);
    const first = publisher.publish('', 'q0', Buffer.from('0')); // fills the buffer
    await until(() => channels[0]?.published.length === 1);
    const abort = new AbortController();
    const patient = publisher.publish('', 'parked', Buffer.from('p'), {}, { signal: abort.signal, onSlowConfirm: () => undefined });
    const after = publisher.publish('', 'q1', Buffer.from('1'));
    abort.abort();
    channels[0].flush(); // the patient one's turn: it gives up, and the next one is written
    await until(() => channels[0].published.includes('q1'));
    channels[0].flush();
    channels[0].confirmAll();
    expect(await settled([first, patient, after])).toEqual(['ok', expect.stringContaining('given up before the broker confirmed it'), 'ok']);
    expect(channels[0].published).toEqual(['q0', 'q1']);
    await publisher.close();
  });
  it('closes a retired channel once the last write waiting in its line gives up (the buffer stayed full)', async () => {
    const { connection, channels } = amqplibLike(1);
    const publisher = new ConfirmPublisher(connection, { ...limits, timeoutMs: 100, confirmTimeoutMs: 60_000 });
    const first = publisher.publish('', 'q0', Buffer.from('0')); // fills the buffer
    await until(() => channels[0]?.published.length === 1);
    const waiting = publisher.publish('', 'q1', Buffer.from('1'));
    channels[0].nackOldest(); // retires the channel; a write still waits in its line
    expect(await settled([first])).toEqual([expect.stringContaining('the broker nacked it')]);
    expect(channels[0].isClosed).toBe(false);
    expect(await settled([waiting])).toEqual([expect.stringContaining('stayed full')]);
    expect(channels[0].isClosed).toBe(true);
    await publisher.close();
  });

  it('closes a retired channel once the last write waiting in its line is a patient one whose signal aborted', async () => {
    const { connection, channels } = amqplibLike(1);
    const publisher = new ConfirmPublisher(connection, { ...limits, confirmTimeoutMs: 60_000 });
    const first = publisher.publish('', 'q0', Buffer.from('0')); // fills the buffer
    await until(() => channels[0]?.published.length === 1);
    const abort = new AbortController();
    const patient = publisher.publish('', 'parked', Buffer.from('p'), {}, { signal: abort.signal, onSlowConfirm: () => undefined });
    channels[0].nackOldest();
    abort.abort();
    channels[0].flush(); // the patient one's turn: it gives up, and nothing is left on the channel
    expect(await settled([first, patient])).toEqual([
      expect.stringContaining('the broker nacked it'),
      expect.stringContaining('given up before the broker confirmed it'),
    ]);
    expect(channels[0].isClosed).toBe(true);
    expect(channels[0].published).toEqual(['q0']);
    await publisher.close();
  });
});
