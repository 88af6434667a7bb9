import { directReplyAddressProblem, isDirectReplyAddress, probeFailure, replyRoute, replyTargetProblem } from './reply-address.rules.js';

describe('replyRoute', () => {
  it('probes a direct reply-to address and sends to it without mandatory (its returns mean nothing)', () => {
    const address = 'amq.rabbitmq.reply-to.g1h2AA1yZXBseUA5MjQ4ODg0AAAKQgAAAAdrBb4U.cxB2XnAvWCbYtU/rWdN2jg==';
    expect(isDirectReplyAddress(address)).toBe(true);
    expect(replyRoute(address)).toEqual({ mandatory: false, probe: true });
  });

  it('sends to an ordinary reply queue with mandatory, whose return is a real "no queue"', () => {
    for (const queue of ['orders.replies', 'amq.gen-JzTY20BRgKO-HjmUJj0wLg', 'amq.rabbitmq.reply-to', 'x.amq.rabbitmq.reply-to.abc']) {
      expect([queue, replyRoute(queue)]).toEqual([queue, { mandatory: true, probe: false }]);
    }
  });
});

describe('directReplyAddressProblem', () => {
  /** Addresses RabbitMQ handed out: 3.10.8, 4.3.6. */
  const real = [
    'amq.rabbitmq.reply-to.g1h2AA1yZXBseUA5MjQ4ODg0AAAI0wAAAABrC6WG.60snwiMOpEPsrY/tBmUPwA==',
    'amq.rabbitmq.reply-to.g1h2AA5yZXBseUAyNjM1NjQ2OAAABAoAAAAAawumag==.Q6pfsBH+MpmQWpDpM5wdAw==',
  ];
  const pidOf = (address: string) => Buffer.from(address.split('.')[3], 'base64');
  const withPid = (pid: Buffer) => `amq.rabbitmq.reply-to.${pid.toString('base64')}.60snwiMOpEPsrY/tBmUPwA==`;

  it("accepts the broker's own addresses, and well-formed pids of the older tag and of short atoms", () => {
    for (const address of real) expect(directReplyAddressProblem(address)).toBeUndefined();
    const node = Buffer.from('rabbit@host');
    const oldPid = Buffer.concat([Buffer.from([131, 103, 119, node.length]), node, Buffer.alloc(9)]);
    expect(directReplyAddressProblem(withPid(oldPid))).toBeUndefined();
  });

  it.each([
    ['the forged address that closed connections', 'amq.rabbitmq.reply-to.g1h2AA==.forged', /base64|process id/],
    ['no key', 'amq.rabbitmq.reply-to.g1h2AA1yZXBseUA5MjQ4ODg0AAAI0wAAAABrC6WG', /form/],
    ['three parts', `${real[0]}.more`, /form/],
    ['an empty suffix', 'amq.rabbitmq.reply-to.', /form/],
    ['the pseudo-queue itself', 'amq.rabbitmq.reply-to', /form/],
    ['not base64', 'amq.rabbitmq.reply-to.@@@@.60snwiMOpEPsrY/tBmUPwA==', /base64/],
    ['base64 without its padding', `amq.rabbitmq.reply-to.${real[1].split('.')[3].replace(/=+$/, '')}.abcd`, /base64/],
    ['an atom, not a pid', withPid(Buffer.from([131, 119, 3, 97, 98, 99])), /process id/],
    ['a pid with a byte more', withPid(Buffer.concat([pidOf(real[0]), Buffer.from([0])])), /process id/],
    ['a pid with a byte less', withPid(pidOf(real[0]).subarray(0, -1)), /process id/],
    ['another term version', withPid(Buffer.concat([Buffer.from([130]), pidOf(real[0]).subarray(1)])), /process id/],
    ['an empty pid', withPid(Buffer.from([131])), /process id/],
  ])('refuses %s', (_, address, why) => {
    expect(directReplyAddressProblem(address)).toMatch(why);
  });
});

describe('probeFailure', () => {
  it('reads a 404 as a caller gone, a close over the probe as a refusal, and a lost socket as "ask again"', () => {
    expect(probeFailure(404, undefined)).toBe('gone');
    expect(probeFailure(403, undefined)).toBe('refused'); // the channel closed over this address
    expect(probeFailure(undefined, 541)).toBe('refused'); // the broker closed the connection over it
    expect(probeFailure(undefined, undefined)).toBe('again'); // the socket went: nothing said about the address
    expect(probeFailure(undefined, 320)).toBe('again'); // a broker shutting down (CONNECTION_FORCED)
  });
});

describe('replyTargetProblem', () => {
  const real = 'amq.rabbitmq.reply-to.g1h2AA1yZXBseUA5MjQ4ODg0AAAI0wAAAABrC6WG.60snwiMOpEPsrY/tBmUPwA==';

  it('lets an address the broker hands out go at once, and any target that is no direct reply-to address', () => {
    expect(replyTargetProblem('', real, false)).toBeUndefined();
    expect(replyTargetProblem('', 'amq.rabbitmq.reply-to', true)).toBeUndefined(); // a queue name: returned as unroutable
    expect(replyTargetProblem('replies', 'amq.rabbitmq.reply-to.forged', true)).toBeUndefined(); // a routing key of an exchange
    expect(replyTargetProblem('', 'orders', true)).toBeUndefined();
  });

  it('refuses a forged address, and a delay to any direct reply-to address', () => {
    expect(replyTargetProblem('', 'amq.rabbitmq.reply-to.g1h2AA==.forged', false)).toBe(
      '"amq.rabbitmq.reply-to.g1h2AA==.forged" is no direct reply-to address RabbitMQ hands out (its pid or key is not base64): reply to a request\'s replyTo as it arrived',
    );
    expect(replyTargetProblem('', real, true)).toMatch(
      /is a direct reply-to address, which lives only as long as its requester's channel: reply without a delay$/,
    );
  });
});
