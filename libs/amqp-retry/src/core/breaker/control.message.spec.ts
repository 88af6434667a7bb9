import { decodeControl, encodeControl } from './control.message.js';

describe('control messages', () => {
  it('round-trips pause and resume', () => {
    const pause = { command: 'pause', queue: 'orders', by: 'alice@ops-host', reason: 'INC-142' } as const;
    expect(decodeControl(encodeControl(pause), 'orders')).toEqual(pause);
    expect(decodeControl(encodeControl({ command: 'resume', queue: 'orders', by: 'bob' }), 'orders')).toEqual({
      command: 'resume',
      queue: 'orders',
      by: 'bob',
    });
  });

  it.each([
    ['not json', 'the body is not JSON'],
    ['[1]', 'the body is not a JSON object'],
    ['{"command":"purge","queue":"orders","by":"x"}', 'command is "purge"; use "pause" or "resume"'],
    ['{"command":"pause","queue":"billing","by":"x"}', 'queue must be the routing key the command was sent with'],
    ['{"command":"pause","queue":"orders"}', 'by is missing'],
    ['{"command":"pause","queue":"orders","by":"x\\u001b[2J"}', 'by must be printable text of 1 to 200 characters'],
  ])('refuses %s', (body, problem) => {
    expect(decodeControl(Buffer.from(body), 'orders')).toEqual({ problem });
  });

  it('refuses a huge body without parsing it', () => {
    expect(decodeControl(Buffer.alloc(100_000, 32), 'orders')).toEqual({ problem: 'the body has 100000 bytes; a command has at most 4096' });
  });
});
