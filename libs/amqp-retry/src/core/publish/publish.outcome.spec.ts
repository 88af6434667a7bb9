import { PublishError } from '../../errors/publish.error.js';
import {
  classifyChannelClose,
  isMissingTarget,
  isUnsendable,
  publishOutcomeAfterClose,
  UNROUTABLE_REASON,
  UNSENDABLE_REASON,
} from './publish.outcome.js';

describe('classifyChannelClose', () => {
  it('names the missing exchange of a 404', () => {
    expect(classifyChannelClose("NOT_FOUND - no exchange 'orders.gone' in vhost '/'", 404)).toEqual({
      reason: "NOT_FOUND - no exchange 'orders.gone' in vhost '/'",
      code: 404,
      exchange: 'orders.gone',
    });
  });

  it("names the forbidden exchange of a 403, even with a quote in its name or the vhost's", () => {
    const reason = "ACCESS_REFUSED - access to exchange 'it's.mine' in vhost 'shop's' refused for user 'billing'";
    expect(classifyChannelClose(reason, 403).exchange).toBe("it's.mine");
  });

  it('names the internal exchange a publish went to, and the default exchange as ""', () => {
    expect(classifyChannelClose("ACCESS_REFUSED - cannot publish to internal exchange 'orders.int' in vhost '/'", 403).exchange).toBe('orders.int');
    const defaultExchange = "ACCESS_REFUSED - access to exchange 'amq.default' in vhost '/' refused for user 'app'";
    expect(classifyChannelClose(defaultExchange, 403).exchange).toBe('');
  });

  it("names the exchange and routing key of a topic permission's refusal", () => {
    const reason = "ACCESS_REFUSED - write access to topic 'eu.order's' in exchange 'shop' in vhost '/' refused for user 'app'";
    expect(classifyChannelClose(reason, 403)).toMatchObject({ exchange: 'shop', routingKey: "eu.order's" });
  });

  it('names no exchange for a lost connection or another error', () => {
    expect(classifyChannelClose(undefined, undefined).exchange).toBeUndefined();
    expect(classifyChannelClose('PRECONDITION_FAILED - invalid expiration', 406).exchange).toBeUndefined();
    expect(classifyChannelClose("NOT_FOUND - no queue 'q' in vhost '/'", 404).exchange).toBeUndefined();
  });
});

describe('publishOutcomeAfterClose on refusals that name more than an exchange', () => {
  it('fails only the publish to the refused topic; other keys on that exchange, and other exchanges, are sent again', () => {
    const topic = classifyChannelClose("ACCESS_REFUSED - write access to topic 'eu.x' in exchange 'shop' in vhost '/' refused for user 'a'", 403);
    expect(publishOutcomeAfterClose(topic, 'shop', 0, 'eu.x')).toMatchObject({ action: 'fail', code: 403 });
    expect(publishOutcomeAfterClose(topic, 'shop', 0, 'us.x')).toEqual({ action: 'resend' });
    expect(publishOutcomeAfterClose(topic, 'other', 0, 'eu.x')).toEqual({ action: 'resend' });
  });

  it('fails a publish to the default exchange refused as amq.default, and sends the others again', () => {
    const close = classifyChannelClose("ACCESS_REFUSED - access to exchange 'amq.default' in vhost '/' refused for user 'a'", 403);
    expect(publishOutcomeAfterClose(close, '', 0, 'orders')).toMatchObject({ action: 'fail', code: 403 });
    expect(publishOutcomeAfterClose(close, 'shop', 0, 'orders')).toEqual({ action: 'resend' });
    // A publish to an exchange named amq.default by a user who may not write there: the 403 is its own too.
    expect(publishOutcomeAfterClose(close, 'amq.default', 0, 'orders')).toMatchObject({ action: 'fail', code: 403 });
  });

  it("fails only a publish to an exchange named amq.default (404: there is none), not those to the default exchange ''", () => {
    const close = classifyChannelClose("NOT_FOUND - no exchange 'amq.default' in vhost '/'", 404);
    expect(close.exchange).toBe('amq.default');
    expect(publishOutcomeAfterClose(close, 'amq.default', 0, 'orders')).toMatchObject({ action: 'fail', code: 404 });
    expect(publishOutcomeAfterClose(close, '', 0, 'orders')).toEqual({ action: 'resend' });
  });
});

describe('publishOutcomeAfterClose', () => {
  const missing = classifyChannelClose("NOT_FOUND - no exchange 'gone' in vhost '/'", 404);

  it('fails the publish to the exchange the close names, with the code', () => {
    expect(publishOutcomeAfterClose(missing, 'gone')).toEqual({
      action: 'fail',
      reason: "the broker closed the channel over it (NOT_FOUND - no exchange 'gone' in vhost '/')",
      code: 404,
    });
  });

  it('sends the neighbours again', () => {
    expect(publishOutcomeAfterClose(missing, 'orders')).toEqual({ action: 'resend' });
    expect(publishOutcomeAfterClose(missing, '')).toEqual({ action: 'resend' });
    expect(publishOutcomeAfterClose(classifyChannelClose(undefined, undefined), 'gone')).toEqual({ action: 'resend' });
  });
});

describe('a message larger than the broker takes', () => {
  const reason = 'PRECONDITION_FAILED - message size 9437184 is larger than configured max size 8388608';
  const close = classifyChannelClose(reason, 406);

  it('reads the limit from the close', () => {
    expect(close).toEqual({ reason, code: 406, exchange: undefined, maxMessageSize: 8_388_608 });
    expect(classifyChannelClose('PRECONDITION_FAILED - message size 600000000 is larger than max size 536870912', 406).maxMessageSize).toBe(
      536_870_912,
    );
  });

  it('fails each publish over the limit with the 406, and sends the others again', () => {
    expect(publishOutcomeAfterClose(close, 'orders', 9_437_184)).toEqual({
      action: 'fail',
      reason: `the broker closed the channel over it (${reason})`,
      code: 406,
    });
    expect(publishOutcomeAfterClose(close, 'orders', 8_388_608)).toEqual({ action: 'resend' });
    expect(publishOutcomeAfterClose(close, 'orders')).toEqual({ action: 'resend' });
  });
});

describe('isMissingTarget', () => {
  it('is true for a 404 and for a returned publish, as the confirm publisher words it', () => {
    expect(isMissingTarget(new PublishError('x', 'k', "NOT_FOUND - no exchange 'x' in vhost '/'", 404))).toBe(true);
    expect(isMissingTarget(new PublishError('', 'orders.error', UNROUTABLE_REASON))).toBe(true);
  });

  it('is false for other publish failures and for errors that are not PublishErrors', () => {
    expect(isMissingTarget(new PublishError('x', 'k', 'the broker nacked it'))).toBe(false);
    expect(isMissingTarget(new PublishError('x', 'k', 'ACCESS_REFUSED', 403))).toBe(false);
    expect(isMissingTarget(new Error(UNROUTABLE_REASON))).toBe(false);
    expect(isMissingTarget(undefined)).toBe(false);
  });
});

describe('isUnsendable', () => {
  it('knows a publish amqplib refused to encode, and a 403 over an internal exchange, from refusals that may pass later', () => {
    const encode = `${UNSENDABLE_REASON}: Field 'routingKey' is the wrong type; must be a string (up to 255 chars)`;
    expect(isUnsendable(new PublishError('x', 'k', encode))).toBe(true);
    const internal = "the broker closed the channel over it (ACCESS_REFUSED - cannot publish to internal exchange 'x' in vhost '/')";
    expect(isUnsendable(new PublishError('x', 'k', internal, 403))).toBe(true);
    expect(isUnsendable(new PublishError('x', 'k', "ACCESS_REFUSED - access to exchange 'x' in vhost '/' refused for user 'u'", 403))).toBe(false);
    expect(isUnsendable(new PublishError('x', 'k', 'the broker nacked it'))).toBe(false);
    expect(isUnsendable(new PublishError('x', 'k', encode, 406))).toBe(false);
    expect(isUnsendable(new Error(encode))).toBe(false);
  });
});
