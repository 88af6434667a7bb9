/** A property of an amqplib internal, for the guards that check its shape; undefined where `value` is no object. */
export function internalProperty(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}
