import { jsonLinesStream } from './export.stream.js';

/** An export of `n` lines that records whether it was told to stop. */
function exportOf(n: number) {
  const state = { read: 0, stopped: false };
  const lines: AsyncIterator<string> = {
    next: async () => (state.read < n ? { done: false, value: `{"n":${++state.read}}` } : { done: true, value: undefined }),
    return: async () => {
      state.stopped = true;
      return { done: true, value: undefined };
    },
  };
  return { state, lines };
}

describe('jsonLinesStream', () => {
  it('writes every line with a newline, the first one included, and does not stop an export that ended', async () => {
    const { state, lines } = exportOf(3);
    const chunks: string[] = [];
    for await (const chunk of jsonLinesStream(await lines.next(), lines, () => undefined)) chunks.push(String(chunk));
    expect(chunks.join('')).toBe('{"n":1}\n{"n":2}\n{"n":3}\n');
    expect(state.stopped).toBe(false);
  });

  it('stops the export when the reader goes away', async () => {
    const { state, lines } = exportOf(1_000_000);
    const stream = jsonLinesStream(await lines.next(), lines, () => undefined);
    for await (const chunk of stream) {
      expect(String(chunk)).toBe('{"n":1}\n');
      break; // the reader leaves after one line: for-await destroys the stream
    }
    await new Promise((resolve) => setImmediate(resolve));
    expect(state.stopped).toBe(true);
    expect(state.read).toBeLessThan(100);
  });

  it('reports a failure of the export and ends the stream with it', async () => {
    const failure = new Error('channel closed');
    let reads = 0;
    const lines: AsyncIterator<string> = { next: async () => (++reads === 1 ? { done: false, value: 'a' } : Promise.reject(failure)) };
    const seen: unknown[] = [];
    const stream = jsonLinesStream(await lines.next(), lines, (error) => seen.push(error));
    await expect(
      (async () => {
        for await (const chunk of stream) void chunk;
      })(),
    ).rejects.toBe(failure);
    expect(seen).toEqual([failure]);
  });
});
