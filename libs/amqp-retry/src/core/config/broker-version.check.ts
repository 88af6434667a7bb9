/**
 * 3.13.0 to 3.13.2 drop a message that is rejected and then expires in a dead-letter cycle (rabbitmq-server #11159):
 * exactly how every retry goes (nack into a tier queue, expire back).
 */
const AFFECTED = /^3\.13\.[0-2](?![0-9])/;

/** A server property as text: amqplib decodes long strings as strings, but a byte array comes as a Buffer. */
function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value.trim();
  if (Buffer.isBuffer(value)) return value.toString('utf8').trim();
  return undefined;
}

/** A warning when the broker is a RabbitMQ version that loses retried messages (pre-releases included), else undefined. */
export function brokerVersionWarning(serverProperties: Record<string, unknown> | undefined): string | undefined {
  if (typeof serverProperties !== 'object' || serverProperties === null) return undefined;
  const product = text(serverProperties.product);
  const version = text(serverProperties.version);
  if (product?.toLowerCase() !== 'rabbitmq' || version === undefined || !AFFECTED.test(version)) return undefined;
  return (
    `RabbitMQ ${version.slice(0, 40)} loses messages that are rejected and then expire in a dead-letter cycle, which is ` +
    'exactly how this library retries (rabbitmq-server issue #11159). Upgrade to 3.13.3 or later and enable the feature ' +
    'flag message_containers_deaths_v2 (rabbitmqctl enable_feature_flag message_containers_deaths_v2).'
  );
}
