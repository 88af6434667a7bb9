import { describeHealth } from './health.report.js';

describe('describeHealth', () => {
  it('is healthy with every connection up and every queue consumed', () => {
    const report = describeHealth({ connections: { consume: true, publish: true }, queues: [{ queue: 'a', consuming: true }] });
    expect(report).toEqual({ healthy: true, connections: { consume: 'up', publish: 'up' }, queues: { a: 'consuming' }, problems: [] });
  });

  it('names the connection that is down and each queue not consumed', () => {
    const report = describeHealth({
      connections: { consume: false, publish: true },
      queues: [
        { queue: 'a', consuming: false },
        { queue: 'b', consuming: true },
      ],
    });
    expect(report.healthy).toBe(false);
    expect(report.problems).toEqual(['the consume connection to RabbitMQ is down', '"a" is not consumed']);
    expect(report.queues).toEqual({ a: 'not consuming', b: 'consuming' });
  });

  it('shows a paused or open queue without calling the application down', () => {
    const report = describeHealth({
      connections: { consume: true, publish: true },
      queues: [
        { queue: 'a', consuming: true, state: 'paused' },
        { queue: 'b', consuming: true, state: 'open' },
        { queue: 'c', consuming: true, state: 'running' },
      ],
    });
    expect(report).toEqual({
      healthy: true,
      connections: { consume: 'up', publish: 'up' },
      queues: { a: 'paused', b: 'open', c: 'consuming' },
      problems: [],
    });
  });

  it('does not count a connection that has not opened yet (no publish so far) as down', () => {
    const report = describeHealth({ connections: { consume: true }, queues: [] });
    expect(report).toMatchObject({ healthy: true, connections: { consume: 'up', publish: 'not opened' } });
  });

  it('reports an outbox relay that cannot publish, and one that relays', () => {
    const problem = 'the outbox relay of amqp_retry_outbox cannot publish: the connection is down';
    const down = describeHealth({ connections: { consume: true }, queues: [], outbox: { table: 'amqp_retry_outbox', relaying: false, problem } });
    expect(down).toMatchObject({ healthy: false, outbox: 'cannot publish', problems: [problem] });
    const up = describeHealth({ connections: { consume: true }, queues: [], outbox: { table: 'amqp_retry_outbox', relaying: true } });
    expect(up).toMatchObject({ healthy: true, outbox: 'relaying', problems: [] });
  });
});
