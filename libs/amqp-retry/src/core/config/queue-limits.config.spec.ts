import { RetryConfigError } from '../../errors/retry-config.error.js';
import { queueLimitArguments, queueLimitWarnings, readQueueLimits } from './queue-limits.config.js';

const at = (key: string) => `option "${key}"`;

describe('readQueueLimits', () => {
  it('takes the limits, TTL and priority, and parks by default', () => {
    expect(readQueueLimits({ maxLength: 10, overflow: 'drop-head', messageTtl: '1m', maxPriority: 10 }, 'classic', at)).toEqual({
      maxLength: 10,
      maxLengthBytes: undefined,
      overflow: 'drop-head',
      messageTtlMs: 60_000,
      maxPriority: 10,
      onExpired: 'park',
    });
  });

  it.each([
    [{ maxLength: 0 }, 'classic', 'option "maxLength"'],
    [{ maxLength: 1.5 }, 'classic', 'option "maxLength"'],
    [{ maxLengthBytes: -1 }, 'classic', 'option "maxLengthBytes"'],
    [{ overflow: 'drop-tail', maxLength: 1 }, 'classic', "Use one of 'drop-head', 'reject-publish', 'reject-publish-dlx'"],
    [{ overflow: 'drop-head' }, 'classic', 'Give maxLength or maxLengthBytes'],
    [{ overflow: 'drop-head', maxLength: 1 }, 'quorum', "use overflow: 'reject-publish'"],
    [{ overflow: 'reject-publish-dlx', maxLength: 1 }, 'quorum', 'quorum queue'],
    [{ messageTtl: '0ms' }, 'classic', 'option "messageTtl"'],
    [{ maxPriority: 256 }, 'classic', 'option "maxPriority"'],
    [{ maxPriority: 5 }, 'quorum', 'Quorum queues take no x-max-priority'],
    [{ onExpired: 'discard' }, 'classic', "Use 'park' (the default) or 'drop'"],
  ] as const)('refuses %j on a %s queue, naming the option and the fix', (options, queueType, text) => {
    expect(() => readQueueLimits(options as never, queueType, at)).toThrow(RetryConfigError);
    expect(() => readQueueLimits(options as never, queueType, at)).toThrow(text);
  });

  it('allows reject-publish on a quorum queue', () => {
    expect(readQueueLimits({ maxLength: 5, overflow: 'reject-publish' }, 'quorum', at).overflow).toBe('reject-publish');
  });
});

describe('queueLimitArguments', () => {
  it('writes only the arguments given', () => {
    expect(queueLimitArguments(undefined)).toEqual({});
    expect(queueLimitArguments(readQueueLimits({}, 'classic', at))).toEqual({});
    expect(queueLimitArguments(readQueueLimits({ maxLengthBytes: 100, messageTtl: '2s' }, 'classic', at))).toEqual({
      'x-max-length-bytes': 100,
      'x-message-ttl': 2000,
    });
  });
});

describe('queueLimitWarnings', () => {
  it('says what the broker may drop, and nothing without limits', () => {
    expect(queueLimitWarnings('q', readQueueLimits({}, 'classic', at), 'classic')).toEqual([]);
    expect(queueLimitWarnings('q', readQueueLimits({ maxLength: 1, overflow: 'reject-publish' }, 'quorum', at), 'quorum')).toEqual([]);
    const classic = queueLimitWarnings('q', readQueueLimits({ maxLength: 1, overflow: 'reject-publish' }, 'classic', at), 'classic');
    expect(classic).toHaveLength(1);
    expect(classic[0]).toContain("use queueType: 'quorum'");
    const ttl = queueLimitWarnings('q', readQueueLimits({ messageTtl: '1m' }, 'quorum', at), 'quorum');
    expect(ttl).toHaveLength(1);
    expect(ttl[0]).toContain('dead-letter cycle rule');
  });
});
