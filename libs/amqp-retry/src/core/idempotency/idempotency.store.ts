/**
 * What a copy of a message finds when it tries to claim its key: it may run the handler ('claimed'), the key was
 * handled already ('handled': ack without calling the handler), or another copy holds an unexpired claim ('busy').
 */
export type ClaimResult = 'claimed' | 'handled' | 'busy';

/**
 * Where keys of handled messages are recorded, shared by every instance of the application. The library ships
 * RedisIdempotencyStore and PostgresIdempotencyStore; implement this to use another database. Every method may
 * throw (or reject) when the store is unreachable: the message is then retried through the tiers, never handled
 * blind. Each state change must be atomic in the store (two instances call these at the same moment).
 *
 * A key is in one of three states: absent, claimed (by a token, until an expiry), handled (until an expiry).
 */
export interface IdempotencyStore {
  /**
   * Claims `key` for `token` until `claimTtlMs` from now if it is absent or its claim has expired; answers
   * 'handled' if it is recorded as handled, 'busy' if another token's claim has not expired.
   */
  claim(key: string, token: string, claimTtlMs: number): Promise<ClaimResult>;
  /** Extends the claim of `token` to `claimTtlMs` from now; false if the key is no longer claimed by `token`. */
  renew(key: string, token: string, claimTtlMs: number): Promise<boolean>;
  /** Removes the claim of `token` (the handler failed: the retry may claim again); does nothing if another holds it. */
  release(key: string, token: string): Promise<void>;
  /** Records `key` as handled for `ttlMs`, whoever claims it (the work is done). */
  markHandled(key: string, ttlMs: number): Promise<void>;
  /** Closes connections the store opened itself; called once when the application shuts down. */
  close?(): Promise<void>;
}
