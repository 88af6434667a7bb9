/**
 * A partitioned handler needs RabbitMQ's consistent-hash exchange, whose plugin ships with RabbitMQ but is off by
 * default: the broker refused the exchange type `x-consistent-hash` (503 COMMAND_INVALID, unknown exchange type).
 */
export class PartitionsPluginError extends Error {
  constructor(
    /** The partitioned handler's queue. */
    readonly queue: string,
    /** The broker's reply text. */
    readonly brokerMessage: string,
  ) {
    super(
      `"${queue}" is partitioned, but the broker does not know the exchange type x-consistent-hash (${brokerMessage}). ` +
        'Enable the plugin that ships with RabbitMQ on every node: rabbitmq-plugins enable rabbitmq_consistent_hash_exchange ' +
        '(no restart needed), then start again. See docs/partitions.md.',
    );
    this.name = 'PartitionsPluginError';
  }
}
