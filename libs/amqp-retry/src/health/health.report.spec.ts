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

  it('does not count a connection that has not opened yet (no publish so far) as down', () => {
    const report = describeHealth({ connections: { consume: true }, queues: [] });
    expect(report).toMatchObject({ healthy: true, connections: { consume: 'up', publish: 'not opened' } });
  });
});
