import { jest } from '@jest/globals';
import { setUp, turns } from '../testing/queue-consumer.fixture.js';
describe('QueueConsumer', () => {
  it('starts on a channel of its own at the configured prefetch, hands each delivery to the handler and acks on it', async () => {
    const { consumer, log, events, channels, calls } = setUp();
    await consumer.start();
    expect({ consuming: consumer.isConsuming, phase: consumer.phase, log, events }).toEqual({
      consuming: true,
      phase: 'consuming',
      log: ['#1 open', '#1 prefetch 10', '#1 consume c1'],
      events: ['consumerUp'],
    });
    channels[0].deliver(1);
    channels[0].deliver(2);
    expect(calls.map((call) => call.tag)).toEqual([1, 2]);
    expect(consumer.inFlightCount).toBe(2);
    calls[0].settle.ack();
    calls[1].settle.ack();
    calls[0].done();
    calls[1].done();
    await turns();
    expect(log.slice(3)).toEqual(['#1 ack 2+']);
    expect(consumer.inFlightCount).toBe(0);
  });

  it('links a delivery to its gate pass only for a handler that waits aside (ordering): others pay nothing per delivery', async () => {
    const plain = setUp();
    await plain.consumer.start();
    plain.channels[0].deliver(1);
    expect(Object.getOwnPropertySymbols(plain.calls[0].message)).toEqual([]);
    const ordered = setUp({ waitsAside: true });
    await ordered.consumer.start();
    ordered.channels[0].deliver(1);
    expect(Object.getOwnPropertySymbols(ordered.calls[0].message)).toHaveLength(1);
  });

  it('stops: cancels first, lets the handler running settle, then closes the channel', async () => {
    const { consumer, log, events, channels, calls } = setUp();
    await consumer.start();
    channels[0].deliver(1);
    const stopping = consumer.stop(5_000);
    await turns();
    expect({ log: log.slice(3), aborted: calls[0].signal.aborted }).toEqual({ log: ['#1 cancel c1'], aborted: false });
    calls[0].settle.ack();
    calls[0].done();
    await stopping;
    expect(log.slice(3)).toEqual(['#1 cancel c1', '#1 ack 1', '#1 close']);
    expect({ phase: consumer.phase, consuming: consumer.isConsuming }).toEqual({ phase: 'stopped', consuming: false });
    expect(events).toEqual(['consumerUp', 'consumerDown: the application is stopping']);
    await consumer.start();
    expect(channels).toHaveLength(1);
  });

  it('abandons a handler still running after the shutdown timeout: its signal aborts and the channel closes', async () => {
    const { consumer, log, lines, channels, calls } = setUp();
    await consumer.start();
    channels[0].deliver(1);
    await consumer.stop(10);
    expect(calls[0].signal.aborted).toBe(true);
    expect(log.at(-1)).toBe('#1 close');
    expect(lines).toContain('warn "orders": 1 handler(s) still running after 10 ms; closing, their messages will be redelivered');
  });

  it('a stop while the channel opens leaves no consumer behind', async () => {
    const { consumer, log, holdChannels } = setUp();
    let open!: () => void;
    holdChannels(new Promise<void>((resolve) => (open = resolve)));
    const starting = consumer.start();
    const stopping = consumer.stop(1_000);
    open();
    await Promise.all([starting, stopping]);
    expect(log).toEqual(['#1 open', '#1 close']);
    expect(consumer.phase).toBe('stopped');
  });

  it('holds at once (the cancel precedes any settlement after it), keeps the channel, and releases at another prefetch', async () => {
    const { consumer, log, events, channels, calls } = setUp();
    await consumer.start();
    channels[0].deliver(1);
    consumer.hold('the circuit opened');
    calls[0].settle.ack();
    calls[0].done();
    await turns();
    expect(log.slice(3)).toEqual(['#1 cancel c1', '#1 ack 1']);
    expect({ held: consumer.isHeld, consuming: consumer.isConsuming, phase: consumer.phase }).toEqual({
      held: true,
      consuming: false,
      phase: 'held',
    });
    consumer.release(2);
    await turns();
    expect(log.slice(5)).toEqual(['#1 prefetch 2', '#1 consume c2']);
    consumer.release(2);
    consumer.release();
    await turns();
    expect(log.slice(7)).toEqual(['#1 cancel c2', '#1 prefetch 10', '#1 consume c3']);
    expect(events).toEqual(['consumerUp', 'consumerDown: the circuit opened', 'consumerUp', 'consumerUp']);
  });

  it('held before it starts: opens the channel without consuming, and consumes on release', async () => {
    const { consumer, log } = setUp();
    consumer.hold('paused');
    await consumer.start();
    expect({ log, phase: consumer.phase }).toEqual({ log: ['#1 open'], phase: 'held' });
    consumer.release();
    await turns();
    expect(log).toEqual(['#1 open', '#1 prefetch 10', '#1 consume c1']);
  });

  it('isolates a suspect: careful at prefetch 1, a suspect runs alone, full prefetch again once a delivery is not suspect', async () => {
    const { consumer, log, channels, calls } = setUp({ isSuspect: (message) => message.fields.redelivered });
    await consumer.start();
    expect(log).toEqual(['#1 open', '#1 prefetch 1', '#1 consume c1']);
    expect(consumer.prefetch).toBe(1); // what an ordering hold is bounded by
    channels[0].deliver(1, true);
    calls[0].settle.ack();
    calls[0].done();
    await turns();
    channels[0].deliver(2);
    await turns();
    expect(log.slice(3)).toEqual(['#1 ack 1']); // the switch waits for the channel to hold no delivery
    calls[1].settle.ack();
    calls[1].done();
    await turns();
    expect(log.slice(4)).toEqual(['#1 cancel c1', '#1 prefetch 10', '#1 consume c2', '#1 ack 2']);
    expect(consumer.prefetch).toBe(10);
    channels[0].deliver(3);
    channels[0].deliver(4, true);
    await turns();
    expect(calls.map((call) => call.tag)).toEqual([1, 2, 3]); // the suspect waits for 3 to finish
    calls[2].done();
    await turns();
    expect(calls.map((call) => call.tag)).toEqual([1, 2, 3, 4]);
    calls[3].done();
    await turns();
    expect(log.slice(8)).toEqual(['#1 cancel c2', '#1 prefetch 1', '#1 consume c3']); // 3 and 4 were never acked here
    expect(consumer.prefetch).toBe(1);
  });

  it('a delivery whose suspicion cannot be told is taken and run alone as a suspect, never left for a multiple ack to cover', async () => {
    const { consumer, log, calls, channels } = setUp({
      isSuspect: (message) => {
        if (message.fields.deliveryTag === 2) throw new Error('unreadable headers');
        return false;
      },
    });
    await consumer.start();
    channels[0].deliver(1);
    channels[0].deliver(2);
    channels[0].deliver(3);
    await turns();
    expect(calls.map((call) => call.tag)).toEqual([1]); // 2 waits to run alone, 3 behind it
    calls[0].settle.ack();
    calls[0].done();
    await turns();
    expect(calls.map((call) => call.tag)).toEqual([1, 2]);
    expect(log.filter((line) => line.includes('ack'))).toEqual(['#1 ack 1']); // 2 unsettled: no ack covers it
    calls[1].settle.ack();
    calls[1].done();
    await turns();
    expect(calls.map((call) => call.tag)).toEqual([1, 2, 3]);
  });

  it('a handler that fails without settling: its delivery is held, then put back after a pause; a lost channel returns it itself', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    try {
      const { consumer, log, lines, calls, channels } = setUp();
      await consumer.start();
      channels[0].deliver(1);
      calls[0].fail(new Error('a defect'));
      await turns();
      expect(lines).toEqual(['error Unexpected failure handling a message from "orders": a defect; it goes back to the queue in 1000 ms']);
      expect({ inFlight: consumer.inFlightCount, settled: log.slice(3) }).toEqual({ inFlight: 1, settled: [] });
      jest.advanceTimersByTime(1_000);
      await turns();
      expect({ inFlight: consumer.inFlightCount, settled: log.slice(3) }).toEqual({ inFlight: 0, settled: ['#1 nack 1 requeue'] });
      // Settled before it failed: nothing more is done. On a channel lost meanwhile: nothing is settled here.
      channels[0].deliver(2);
      calls[1].settle.ack();
      calls[1].fail(new Error('after the ack'));
      channels[0].deliver(3);
      calls[2].fail(new Error('then the channel closes'));
      await turns();
      expect(consumer.inFlightCount).toBe(1);
      channels[0].emit('close');
      await turns();
      jest.advanceTimersByTime(1_000);
      await turns();
      expect({ inFlight: consumer.inFlightCount, settled: log.slice(4).filter((line) => line.startsWith('#1 ')) }).toEqual({
        inFlight: 0,
        settled: ['#1 ack 2'],
      });
    } finally {
      jest.useRealTimers();
    }
  });

  it("resumes at once on a fresh channel after the broker's consumer timeout closed the channel", async () => {
    const { consumer, log, lines, events, channels, calls } = setUp();
    await consumer.start();
    channels[0].deliver(1);
    channels[0].brokerClose('PRECONDITION_FAILED - delivery acknowledgement on channel 1 timed out. Timeout value used: 2000 ms');
    expect(calls[0].signal.aborted).toBe(true);
    await turns();
    expect(log.slice(3)).toEqual(['#2 open', '#2 prefetch 10', '#2 consume c1']);
    expect(lines.some((line) => line.startsWith(`warn "orders": the broker's consumer timeout of 2s expired`))).toBe(true);
    expect(events).toEqual(['consumerUp', expect.stringMatching(/^consumerDown: PRECONDITION_FAILED/), 'consumerUp']);
    calls[0].settle.ack();
    await turns();
    expect(lines.filter((line) => line.startsWith('debug Dropped a settlement'))).toHaveLength(0); // the fake channel takes it
  });

  it('after the queue was deleted: retires the channel, declares the queue again with backoff, and resumes', async () => {
    const { consumer, log, lines, channels, calls, goneQueue } = setUp();
    await consumer.start();
    channels[0].deliver(1);
    goneQueue();
    channels[0].brokerCancel();
    expect(calls[0].signal.aborted).toBe(true);
    const deadline = Date.now() + 2_000;
    while (!log.includes('#3 consume c1') && Date.now() < deadline) await turns();
    // #2: the passive declare that finds the queue gone
    expect(log.slice(3)).toEqual([
      '#1 cancel c1',
      '#1 nack 1 requeue',
      '#1 close',
      '#2 close',
      'redeclare',
      '#3 open',
      '#3 prefetch 10',
      '#3 consume c1',
    ]);
    expect(lines).toContain('error The broker cancelled the consumer of "orders": the queue was deleted; declaring it again and resuming in 5 ms');
    expect(consumer.phase).toBe('consuming');
  });

  it('a lost connection waits for the connection to start it again, and keeps a hold', async () => {
    const { consumer, log, channels } = setUp();
    await consumer.start();
    consumer.hold('paused');
    channels[0].emit('close');
    await turns();
    expect(consumer.phase).toBe('down');
    await consumer.start();
    expect({ log: log.slice(4), phase: consumer.phase, held: consumer.isHeld }).toEqual({ log: ['#2 open'], phase: 'held', held: true });
  });
});
