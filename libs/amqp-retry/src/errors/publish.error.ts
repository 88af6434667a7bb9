/** A publish that the broker did not confirm (nack, closed channel) or returned as unroutable. */
export class PublishError extends Error {
  constructor(
    readonly exchange: string,
    readonly routingKey: string,
    reason: string,
  ) {
    super(`Publish to exchange "${exchange}" with routing key "${routingKey}" failed: ${reason}`);
    this.name = 'PublishError';
  }
}
