import { Test } from '@nestjs/testing';
import { RetryConfigError } from '../errors/retry-config.error.js';
import { RetryModule } from './retry.module.js';

describe('RetryModule.forRootAsync', () => {
  it.each([undefined, null, []])('refuses a factory that returns %j, naming the factory and the fix', async (returned) => {
    const compiling = Test.createTestingModule({ imports: [RetryModule.forRootAsync({ useFactory: () => returned as never })] }).compile();
    await expect(compiling).rejects.toThrow(RetryConfigError);
  });

  it("says what forRootAsync's factory returned and what to return", async () => {
    const compiling = Test.createTestingModule({ imports: [RetryModule.forRootAsync({ useFactory: () => undefined as never })] }).compile();
    await expect(compiling).rejects.toThrow(
      "RetryModule options (what forRootAsync's factory returned) are undefined, not an options object. Return the options object from useFactory",
    );
  });
});
