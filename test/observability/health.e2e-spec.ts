import { RetryEngine } from 'nestjs-amqp-retry';
import { handlerFor, TEST_OPTIONS } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { get, startHealthApp } from '../support/health-app.js';
import { useSuite } from '../support/suite.js';
import { TcpProxy } from '../support/tcp-proxy.js';

interface HealthBody {
  status: string;
  details?: { rabbitmq?: { status: string; connections: Record<string, string>; queues: Record<string, string>; problems: string[] } };
}

describe('RetryHealthIndicator over HTTP', () => {
  const suite = useSuite('obs.health');

  it('is up while consuming, down (503, saying which) while the connection is cut, and up again after recovery', async () => {
    const { broker, queue } = suite;
    const proxy = await new TcpProxy().start();
    suite.afterThis(() => proxy.stop());
    const Handler = handlerFor({ queue }, () => undefined);
    const started = await startHealthApp(
      { ...TEST_OPTIONS, url: proxy.url, reconnect: { initialDelay: '50ms', maxDelay: '200ms' } },
      { providers: [Handler] },
    );
    suite.app = started.app;
    const health = `${started.base}/health`;

    const up = await get(health);
    expect(up.status).toBe(200);
    const upBody = up.body as HealthBody;
    expect(upBody.status).toBe('ok');
    expect(upBody.details?.rabbitmq).toMatchObject({
      status: 'up',
      connections: { consume: 'up', publish: 'up' },
      queues: { [queue]: 'consuming' },
    });

    await proxy.cut();
    const down = await waitFor(async () => {
      const response = await get(health);
      return response.status === 503 && response;
    }, 'the health check to fail');
    const downDetail = (down.body as HealthBody).details?.rabbitmq;
    expect(downDetail?.status).toBe('down');
    expect(downDetail?.connections.consume).toBe('down');
    expect(downDetail?.queues[queue]).toBe('not consuming');
    expect(downDetail?.problems).toEqual(expect.arrayContaining(['the consume connection to RabbitMQ is down', `"${queue}" is not consumed`]));

    await proxy.restore();
    const recovered = await waitFor(
      async () => {
        const response = await get(health);
        return response.status === 200 && response;
      },
      'the health check to pass again',
      20_000,
    );
    expect((recovered.body as HealthBody).details?.rabbitmq?.queues[queue]).toBe('consuming');
    expect(await broker.consumers(queue)).toBe(1);
  });

  it('is down, naming the queue, while its consumer is cancelled and not yet back', async () => {
    const { broker, queue } = suite;
    const Handler = handlerFor({ queue }, () => undefined);
    // A slow resume keeps the consumer down long enough to be seen.
    const started = await startHealthApp({ ...TEST_OPTIONS, reconnect: { initialDelay: '1500ms', maxDelay: '3s' } }, { providers: [Handler] });
    suite.app = started.app;
    const health = `${started.base}/health`;
    expect((await get(health)).status).toBe(200);

    await broker.channel.deleteQueue(queue); // the broker cancels the consumer
    const down = await waitFor(async () => {
      const response = await get(health);
      return response.status === 503 && response;
    }, 'the health check to fail');
    const detail = (down.body as HealthBody).details?.rabbitmq;
    expect(detail?.connections).toEqual({ consume: 'up', publish: 'up' });
    expect(detail?.problems).toEqual([`"${queue}" is not consumed`]);

    await waitFor(async () => (await get(health)).status === 200, 'the consumer to resume', 20_000);
    expect(await broker.consumers(queue)).toBe(1);
  });

  it('stays up while a queue is paused or its circuit open, and shows which (docs/outage-protection.md)', async () => {
    const { broker, queue } = suite;
    const Handler = handlerFor({ queue, delays: ['10s'], circuitBreaker: { consecutiveFailures: 1, openFor: '1m' } }, () => {
      throw new Error('dependency down');
    });
    const started = await startHealthApp(TEST_OPTIONS, { providers: [Handler] });
    suite.app = started.app;
    const health = `${started.base}/health`;
    await broker.publish('', queue, { n: 1 });
    const open = await waitFor(async () => {
      const response = await get(health);
      return (response.body as HealthBody).details?.rabbitmq?.queues[queue] === 'open' && response;
    }, 'the circuit open');
    expect(open.status).toBe(200);
    expect((open.body as HealthBody).details?.rabbitmq).toMatchObject({ status: 'up', problems: [] });
    expect(await broker.consumers(queue)).toBe(0);

    started.app.get(RetryEngine).pause(queue, { by: 'alice' });
    const paused = await get(health);
    expect(paused.status).toBe(200);
    expect((paused.body as HealthBody).details?.rabbitmq?.queues[queue]).toBe('paused');
  });
});
