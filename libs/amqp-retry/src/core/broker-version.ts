/** Reads a server property that amqplib may give as a string or a Buffer. */
const text = (value: unknown): string | undefined =>
  typeof value === 'string' ? value : Buffer.isBuffer(value) ? value.toString('utf8') : undefined;

/**
 * A warning for broker versions known to lose messages in this library's loop: RabbitMQ 3.13.0 to 3.13.2 drop
 * messages in reject-then-expire dead-letter cycles (rabbitmq-server #11159), exactly how retries move through the
 * tiers. Undefined for every other version, or when the broker does not say.
 */
export function brokerVersionWarning(serverProperties: Record<string, unknown> | undefined): string | undefined {
  const product = text(serverProperties?.product);
  const version = text(serverProperties?.version);
  if (product !== 'RabbitMQ' || version === undefined || !/^3\.13\.[0-2]$/.test(version)) return undefined;
  return (
    `RabbitMQ ${version} drops messages in reject-then-expire dead-letter cycles (rabbitmq-server #11159), which is how ` +
    'retries move through their tiers: upgrade to 3.13.3 or later and enable the feature flag message_containers_deaths_v2'
  );
}
