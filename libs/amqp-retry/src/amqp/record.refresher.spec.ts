import { readRecordMessages } from './record.refresher.js';
import { recordQueue as queueOf } from '../testing/record-queue.fixture.js';

/** The fixture's queue of records, and `read`: one readRecordMessages on a channel of its own, closed after. */
async function recordQueue(bodies: string[], refuse?: Parameters<typeof queueOf>[1]) {
  const { open, depth } = await queueOf(bodies, refuse);
  const read = async () => {
    const channel = await open();
    try {
      const { messages, held } = await readRecordMessages(channel, 'records');
      return { bodies: messages.map((message) => message.content.toString()), held, types: messages.map((m) => m.properties.contentType) };
    } finally {
      await channel.close();
    }
  };
  return { read, depth };
}

describe('readRecordMessages on a quorum queue', () => {
  it('keeps every record, in order, however many times it is read', async () => {
    const { read, depth } = await recordQueue(['a', 'b', 'c']);
    for (let i = 0; i < 60; i++) expect(await read()).toEqual({ bodies: ['a', 'b', 'c'], held: 3, types: Array(3).fill('application/json') });
    expect(depth()).toBe(3);
  });

  it('drops the extra copies a stopped refresh left, the last record still last', async () => {
    const { read, depth } = await recordQueue(['a', 'b', 'c', 'a', 'b']);
    let last;
    for (let i = 0; i < 30; i++) last = await read();
    expect(last?.bodies).toEqual(['c', 'a', 'b']);
    expect(depth()).toBe(3);
  });

  it('keeps the records when the broker refuses a copy', async () => {
    let refusing = false;
    const { read, depth } = await recordQueue(['a', 'b'], () => refusing);
    for (let i = 0; i < 9; i++) await read();
    refusing = true;
    expect(await read()).toEqual({ bodies: ['a', 'b'], held: 2, types: ['application/json', 'application/json'] });
    refusing = false;
    for (let i = 0; i < 30; i++) expect((await read()).bodies).toEqual(['a', 'b']);
    expect(depth()).toBe(2);
  });
});
