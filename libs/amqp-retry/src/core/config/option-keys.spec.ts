import { unknownHandlerOptions, unknownModuleOptions } from './option-keys.js';

describe('unknownHandlerOptions', () => {
  it('names a misspelt key and the option it most likely meant', () => {
    expect(unknownHandlerOptions({ queue: 'orders', maxAttempt: 3, Prefetch: 5, errorqueue: 'x', delay: ['1s'] }, 'Orders.handle')).toEqual([
      '@RetryWithBackoff option "maxAttempt" of Orders.handle is not an option and is ignored: did you mean "maxAttempts"?',
      '@RetryWithBackoff option "Prefetch" of Orders.handle is not an option and is ignored: did you mean "prefetch"?',
      '@RetryWithBackoff option "errorqueue" of Orders.handle is not an option and is ignored: did you mean "errorQueue"?',
      '@RetryWithBackoff option "delay" of Orders.handle is not an option and is ignored: did you mean "delays"?',
    ]);
  });

  it('names a key far from every option without a guess, and is quiet for the options themselves', () => {
    expect(unknownHandlerOptions({ queue: 'orders', colour: 'blue' }, 'Orders.handle')).toEqual([
      '@RetryWithBackoff option "colour" of Orders.handle is not an option and is ignored',
    ]);
    const every = { queue: 'q', delays: ['1s'], maxAttempts: 2, onExpired: 'drop', maxLength: 5, partitions: undefined, timeout: '1s' };
    expect(unknownHandlerOptions(every, 'Orders.handle')).toEqual([]);
  });
});

describe('unknownModuleOptions', () => {
  it('names misspelt module options', () => {
    expect(unknownModuleOptions({ url: 'amqp://x', handlerTimout: '5s', shutdownTimeout: '1s' })).toEqual([
      'RetryModule option "handlerTimout" is not an option and is ignored: did you mean "handlerTimeout"?',
    ]);
    expect(unknownModuleOptions({ url: 'amqp://x', isGlobal: true }, ['isGlobal'])).toEqual([]);
  });
});
