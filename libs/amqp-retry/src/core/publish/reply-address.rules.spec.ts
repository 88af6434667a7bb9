import { isDirectReplyAddress, replyRoute } from './reply-address.rules.js';

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
