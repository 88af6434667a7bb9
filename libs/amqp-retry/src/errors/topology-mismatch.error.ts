/** A queue that exists with another type than the one configured: 'classic', 'quorum', 'stream' or a plugin's. */
export interface QueueTypeMismatch {
  /** The type the library declares the queue with. */
  configured: 'classic' | 'quorum';
  /** The type the queue has on the broker. */
  found: string;
}

/** A partitioned handler's hash exchange that hashes another key than the one configured (both as `partitions.key` reads). */
export interface HashKeyMismatch {
  /** The key the start is configured with, e.g. `{ header: 'x-customer' }`. */
  configured: string;
  /** The key the exchange hashes, as recorded when it was declared. */
  found: string;
}

/**
 * The broker refused to declare a queue or exchange because one of that name already exists with other arguments
 * (AMQP 406 PRECONDITION_FAILED); nothing is changed on the broker. `hashKeys`: RabbitMQ accepts a redeclare of a
 * consistent-hash exchange with another key and keeps the first, so the library refuses the start itself.
 */
export class TopologyMismatchError extends Error {
  constructor(
    /** What the broker refused to declare. */
    readonly kind: 'queue' | 'exchange',
    /** Its name. */
    readonly entity: string,
    /** The broker's reply text (what differs). */
    readonly brokerMessage: string,
    /** When what differs is the queue's type: the type configured and the type found. */
    readonly queueTypes?: QueueTypeMismatch,
    /** When what differs is what a partitioned handler's hash exchange hashes: the key configured and the key found. */
    readonly hashKeys?: HashKeyMismatch,
  ) {
    super(
      hashKeys
        ? hashKeyMessage(entity, hashKeys)
        : queueTypes
          ? typeMessage(entity, brokerMessage, queueTypes)
          : argumentsMessage(kind, entity, brokerMessage),
    );
    this.name = 'TopologyMismatchError';
  }
}

/** The queue arguments that a policy can set on a live queue instead (max-length, max-length-bytes, overflow, message-ttl). */
const POLICY_ARGUMENTS = /'x-(max-length|max-length-bytes|overflow|message-ttl)'/;

function argumentsMessage(kind: 'queue' | 'exchange', entity: string, brokerMessage: string): string {
  const byPolicy = POLICY_ARGUMENTS.exec(brokerMessage);
  const policy = byPolicy
    ? ` To change a length limit, overflow or TTL of a live queue without moving its messages, restore the previous option and set the new value by a policy instead (rabbitmqctl set_policy NAME '^${entity}$' '{"${byPolicy[1]}": ...}' --apply-to queues; a queue's own argument wins over a policy, so the option must go), or move to a new queue name (docs/operations.md, "Policies").`
    : '';
  return (
    `The ${kind} "${entity}" already exists on the broker with different arguments (${brokerMessage}). ` +
    `RabbitMQ cannot change the arguments of an existing ${kind}. Either restore the previous configuration, ` +
    `or let the ${kind} drain and delete it (rabbitmqctl delete_${kind} ${entity}) so it is declared anew.${policy}`
  );
}

function typeMessage(entity: string, brokerMessage: string, { configured, found }: QueueTypeMismatch): string {
  const keep = found === 'classic' || found === 'quorum' ? `set queueType: '${found}' where this queue is configured, ` : '';
  return (
    `The queue "${entity}" exists on the broker as a ${found} queue, but it is configured as a ${configured} queue, ` +
    `queueType: '${configured}' (${brokerMessage}). A vhost whose default queue type is ${found} makes every queue declared ` +
    `without a type a ${found} queue, and RabbitMQ cannot change the type of an existing queue. Either ${keep}or let the ` +
    `queue drain and delete it (rabbitmqctl delete_queue ${entity}) so it is declared anew as a ${configured} queue.`
  );
}

function hashKeyMessage(entity: string, { configured, found }: HashKeyMismatch): string {
  return (
    `The partitioned handler "${entity}" is configured with partitions.key ${configured}, but its consistent-hash exchange ` +
    `"${entity}" was declared with partitions.key ${found} and hashes that: RabbitMQ keeps an existing exchange's ` +
    `arguments when it is declared again with others, so messages would still be spread by ${found} (those without it ` +
    `all in one partition, and the order kept by the wrong key). Either set partitions.key back to ${found}, or change ` +
    `the key: stop every instance, delete the exchange "${entity}" (the management UI, rabbitmqadmin delete exchange ` +
    `name=${entity}, or exchange.delete from any AMQP client), and start with the new key, which declares it again ` +
    `(docs/partitions.md, "Changing the key").`
  );
}
