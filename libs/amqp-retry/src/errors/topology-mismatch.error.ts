/**
 * The broker refused to declare a queue or exchange because one of that name already exists with other
 * arguments (AMQP 406 PRECONDITION_FAILED). Nothing is changed on the broker.
 */
export class TopologyMismatchError extends Error {
  constructor(
    readonly kind: 'queue' | 'exchange',
    readonly entity: string,
    readonly brokerMessage: string,
  ) {
    super(
      `The ${kind} "${entity}" already exists on the broker with different arguments (${brokerMessage}). ` +
        `RabbitMQ cannot change the arguments of an existing ${kind}. Either restore the previous configuration, ` +
        `or let the ${kind} drain and delete it (rabbitmqctl delete_${kind} ${entity}) so it is declared anew.`,
    );
    this.name = 'TopologyMismatchError';
  }
}
