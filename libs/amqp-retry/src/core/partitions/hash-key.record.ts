import { readRecordFields } from '../topology/json-record.reader.js';

/**
 * What a partitioned handler's hash exchange hashes, recorded in `<queue>.partitions.key`: a redeclare with another
 * `hash-header` is accepted and ignored (observed on 3.10.8 and 4.3.6), and AMQP cannot read arguments back, so every
 * later start compares its key with this record.
 */
export interface HashKeyRecord {
  /** The consistent-hash exchange's arguments: `{ 'hash-header': name }` or `{ 'hash-property': 'message_id' }`. */
  hashArguments: Record<string, string>;
}

/** Reads a record defensively; anything unreadable counts as no record. */
export function readHashKeyRecord(content: Buffer): HashKeyRecord | undefined {
  const args = readRecordFields(content).hashArguments;
  if (typeof args !== 'object' || args === null) return undefined;
  const entries = Object.entries(args as Record<string, unknown>).filter((e): e is [string, string] => typeof e[1] === 'string');
  return entries.length === 0 ? undefined : { hashArguments: Object.fromEntries(entries) };
}

export const writeHashKeyRecord = (record: HashKeyRecord): Buffer => Buffer.from(JSON.stringify(record));

/** The key as the user writes it in `partitions.key`: `{ header: 'x-key' }` or `'messageId'`. */
export function describeHashKey(hashArguments: Record<string, string>): string {
  const header = hashArguments['hash-header'];
  if (header !== undefined) return `{ header: '${header}' }`;
  if (hashArguments['hash-property'] === 'message_id') return "'messageId'";
  return JSON.stringify(hashArguments);
}

const sameArguments = (a: Record<string, string>, b: Record<string, string>): boolean => {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
};

/**
 * What a start does about the record: `record` it (a new exchange), `keep` it (the same key), `unverified` (an
 * exchange without a record: record the key and warn), or `mismatch` (another key: fail, changing nothing).
 */
export type HashKeyDecision =
  { action: 'record' } | { action: 'keep' } | { action: 'unverified' } | { action: 'mismatch'; found: Record<string, string> };

export function decideHashKey(exchangeExisted: boolean, recorded: HashKeyRecord | undefined, configured: Record<string, string>): HashKeyDecision {
  if (!exchangeExisted) return { action: 'record' };
  if (recorded === undefined) return { action: 'unverified' };
  if (sameArguments(recorded.hashArguments, configured)) return { action: 'keep' };
  return { action: 'mismatch', found: recorded.hashArguments };
}
