import type { ArgumentsHost } from '@nestjs/common';
import type { ExternalContextCreator } from '@nestjs/core';
import { withoutExceptionLogs } from './quiet-exceptions.context.js';

/** A stand-in for Nest's ExternalContextCreator with one exceptions handler whose filters answer `answer`. */
function creatorWhoseFiltersAnswer(answer: unknown) {
  const handler = {
    next: async (_exception: Error, _host: ArgumentsHost): Promise<unknown> => 'nest fallback',
    invokeCustomFilters: () => answer,
  };
  const creator = { filtersContextCreator: { create: () => handler } } as unknown as ExternalContextCreator;
  const quiet = withoutExceptionLogs(creator) as unknown as { filtersContextCreator: { create(): typeof handler } };
  return quiet.filtersContextCreator.create();
}

const host = {} as ArgumentsHost;

describe('withoutExceptionLogs', () => {
  it.each([
    ['Nest 12', undefined],
    ['Nest 10 and 11', null],
    ['a filter', false],
    ['a filter', 0],
    ['a filter', ''],
  ])('rethrows an error no filter handled (%s answers %p: falsy, as Nest reads an RPC filter), so the engine retries it', async (_, answer) => {
    const error = new Error('payment declined');
    await expect(creatorWhoseFiltersAnswer(answer).next(error, host)).rejects.toBe(error);
  });

  it("returns a filter's answer when a filter handled the error", async () => {
    await expect(creatorWhoseFiltersAnswer('handled').next(new Error('x'), host)).resolves.toBe('handled');
  });
});
