/** What the start says of the relay's pool: refuse it (the relay would hang), or warn (it may take every connection). */
export interface RelayPoolProblem {
  refuse: boolean;
  problem: string;
  fix: string;
}

/**
 * Whether a relay (its LISTEN and `concurrency` rounds, a connection each) fits a pool of `max`: one no larger than
 * LISTEN holds is refused (everything would hang), one it can fill is a warning; undefined when it fits or is unknown.
 * @example relayPoolProblem(1, 2, true) // { refuse: true, problem: 'is on a pool of at most 1 connection, ...' }
 */
export function relayPoolProblem(max: number | undefined, concurrency: number, listens: boolean): RelayPoolProblem | undefined {
  if (max === undefined || !Number.isFinite(max)) return undefined;
  const relay = concurrency + (listens ? 1 : 0);
  const wanted = relay + 1;
  if (max >= wanted) return undefined;
  const holds = listens
    ? `its LISTEN holds one for good and each of its ${concurrency} rounds at once takes one`
    : `each of its ${concurrency} rounds at once takes one`;
  const connections = `${max} connection${max === 1 ? '' : 's'}`;
  const fix = `Give the pool at least ${wanted} (the relay's ${relay}, and one for your own transactions; pg's max, TypeORM's poolSize or extra.max; more for an inbox, which holds one per handler call), lower outbox.concurrency, or set outbox.relay: false in this process.`;
  const refuse = listens && max <= 1;
  const problem = refuse
    ? `is on a pool of at most ${connections}, which the relay's LISTEN would hold for good: no round of the relay, nor any transaction of yours, would get one (the outbox relay needs ${relay}: ${holds})`
    : `is on a pool of at most ${connections}, which the outbox relay can fill at once (it needs ${relay}: ${holds}); your transactions then wait for its rounds`;
  return { refuse, problem, fix };
}
