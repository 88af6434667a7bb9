import { topicMatches } from '../core/topology/topic-pattern.match.js';

/** The exchange types the in-memory broker routes (RabbitMQ's built-in ones). */
export type ExchangeType = 'direct' | 'topic' | 'fanout' | 'headers';

/** A binding from an exchange to a queue or another exchange. */
export interface MemoryBinding {
  source: string;
  destination: string;
  destinationType: 'queue' | 'exchange';
  pattern: string;
  arguments: Record<string, unknown>;
}

/** A header's value as a headers exchange compares it (amqplib's typed values by their value). */
function comparable(value: unknown): unknown {
  if (typeof value === 'object' && value !== null && '!' in value && 'value' in value) return comparable((value as { value: unknown }).value);
  if (Buffer.isBuffer(value)) return value.toString('binary');
  if (typeof value === 'bigint') return Number(value);
  return value;
}

/**
 * A headers exchange's binding against a message's headers: `x-match` `all` (the default) or `any` compare the
 * binding's arguments that do not start with `x-`; `all-with-x` and `any-with-x` compare those too. An argument
 * without a value (undefined or null) matches a header that is present.
 */
export function headersMatch(bindingArguments: Record<string, unknown>, headers: Record<string, unknown> | undefined): boolean {
  const mode = String(bindingArguments['x-match'] ?? 'all');
  const withX = mode.endsWith('-with-x');
  const any = mode.startsWith('any');
  const keys = Object.keys(bindingArguments).filter((key) => key !== 'x-match' && (withX || !key.startsWith('x-')));
  const given = headers ?? {};
  const hit = (key: string) => {
    if (!(key in given)) return false;
    const wanted = bindingArguments[key];
    return wanted === undefined || wanted === null || comparable(wanted) === comparable(given[key]);
  };
  if (keys.length === 0) return !any;
  return any ? keys.some(hit) : keys.every(hit);
}

/** Whether a binding of an exchange of each type takes a message with these routing keys and headers. */
type BindingMatch = (binding: MemoryBinding, routingKeys: readonly string[], headers: Record<string, unknown>) => boolean;
export const bindingMatches: Record<ExchangeType, BindingMatch> = {
  fanout: () => true,
  direct: (binding, routingKeys) => routingKeys.includes(binding.pattern),
  topic: (binding, routingKeys) => routingKeys.some((key) => topicMatches(binding.pattern, key)),
  headers: (binding, _routingKeys, headers) => headersMatch(binding.arguments, headers),
};
