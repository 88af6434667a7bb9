/** A publish that the broker did not confirm (nack, closed channel) or returned as unroutable. */
export class PublishError extends Error {
  constructor(
    /** The exchange the message was published to. */
    readonly exchange: string,
    /** Its routing key. */
    readonly routingKey: string,
    reason: string,
    /** The AMQP reply code when the broker closed the channel over it, e.g. 404 for a missing exchange. */
    readonly brokerCode?: number,
  ) {
    super(`Publish to exchange "${exchange}" with routing key "${routingKey}" failed: ${reason}`);
    this.name = 'PublishError';
  }
}
