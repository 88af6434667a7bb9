/**
 * Where a request's reply goes, and what the broker's answer to a reply says about its caller.
 *
 * RabbitMQ's direct reply-to (`replyTo: amq.rabbitmq.reply-to`, Nest's and RetryClient's default) hands the server an
 * address `amq.rabbitmq.reply-to.<id>` that is no queue. A `mandatory` publish to it says nothing about the caller:
 * RabbitMQ 3.10 and 4.0 both deliver it and return it as unroutable, whether the caller is there or gone; 4.3 never
 * returns it (observed; docs/design.md). A passive declare of the address does tell: it succeeds while the caller's
 * channel consumes it and fails with 404 once that channel is gone (on 3.10, 4.0 and 4.3; RabbitMQ's direct reply-to
 * docs suggest it). Replies to an ordinary queue keep `mandatory`, whose return means what it says.
 */

export const DIRECT_REPLY_PREFIX = 'amq.rabbitmq.reply-to.';

/** True for an address handed out by direct reply-to. */
export const isDirectReplyAddress = (replyTo: string): boolean => replyTo.startsWith(DIRECT_REPLY_PREFIX);

/**
 * How to send a reply to `replyTo`: with `mandatory` only where a return means "no queue took it"; `probe`: ask first
 * whether the caller is still there (a direct reply-to address, whose returns mean nothing).
 */
export function replyRoute(replyTo: string): { mandatory: boolean; probe: boolean } {
  const direct = isDirectReplyAddress(replyTo);
  return { mandatory: !direct, probe: direct };
}
