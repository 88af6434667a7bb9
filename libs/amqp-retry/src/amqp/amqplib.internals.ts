/**
 * Reads a property of an amqplib object that is not public API (its Connection, its multiplexer), for the guards
 * that check an internal's shape before they rely on it: undefined where `value` is not an object.
 */
export function internalProperty(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}
