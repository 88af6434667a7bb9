import { NonRetryableError } from 'nestjs-amqp-retry';
import { handlerFor, handlerOf, startApp } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { headersOf, SUITE_OPTIONS, useSuite } from '../support/suite.js';

/**
 * A header of AMQP type long (64-bit) beyond 2^53 cannot reach the handler or a parked copy exactly: amqplib decodes
 * every long into a JavaScript number (lib/codec.js, `Number(readBigInt64BE)`) and offers no option to do otherwise, so
 * the library never sees the original value. docs/retries-and-parking.md documents the limit ("How it works"); this shows it, and that
 * such a message is parked all the same.
 */
describe('long (int64) headers beyond 2^53', () => {
  const suite = useSuite('e2e.int64');

  it('reach the handler and the parked copy rounded to the nearest double; safe and representable values are exact', async () => {
    const { broker, queue } = suite;
    const seen: Array<Record<string, unknown>> = [];
    const Handler = handlerFor({ queue, delays: [50] }, (_payload, context) => {
      seen.push({ ...context.message.properties.headers });
      throw new NonRetryableError('park it');
    });
    suite.app = await startApp([Handler], SUITE_OPTIONS);
    // Published exactly (amqplib encodes a typed BigInt as it is): the broker holds these values.
    await broker.publish(
      '',
      queue,
      { n: 1 },
      {
        headers: {
          'x-safe': { '!': 'int64', value: 2n ** 53n - 1n },
          'x-above': { '!': 'int64', value: 2n ** 53n + 1n },
          'x-power': { '!': 'int64', value: 2n ** 60n },
          'x-largest': { '!': 'int64', value: 2n ** 63n - 1n },
          'x-negative': { '!': 'int64', value: -(2n ** 53n) - 1n },
        },
      },
    );
    const [copy] = await broker.take(`${queue}.error`, 1, 15_000);
    await waitFor(() => handlerOf(suite.app!, Handler).calls.length === 1, 'the one handler call');
    const parked = headersOf(copy);
    const expected = {
      'x-safe': 2 ** 53 - 1, // exact
      'x-above': 2 ** 53, // 2^53 + 1 has no double: rounded
      'x-power': 2 ** 60, // a double: exact
      'x-largest': 2 ** 63, // rounded up to 2^63, which amqplib then writes as a double (no long holds it)
      'x-negative': -(2 ** 53), // rounded
    };
    expect(seen[0]).toMatchObject(expected);
    expect(parked).toMatchObject({ ...expected, 'x-parked-reason': 'non-retryable' });
    expect(parked['x-parked-dropped-headers']).toBeUndefined(); // none was dropped: the message parks as any other
  });
});
