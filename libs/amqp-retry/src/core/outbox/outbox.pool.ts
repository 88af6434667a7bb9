/**
 * Why a relay cannot run on a pool of `max` connections, or undefined when it can. The relay's LISTEN holds one
 * connection for as long as it runs, each of its `concurrency` rounds takes one while it runs, and the application's
 * own transactions need at least one more: with fewer, a round (and the application's `pool.connect()`) would wait
 * for ever for a connection the LISTEN never gives back, and the relay's stop with it.
 * @example relayPoolProblem(1, 2, true) // 'allows 1 connection, and the relay alone needs 3 ...'
 */
export function relayPoolProblem(max: number | undefined, concurrency: number, listens: boolean): { problem: string; fix: string } | undefined {
  if (max === undefined || !Number.isFinite(max)) return undefined;
  const relay = concurrency + (listens ? 1 : 0);
  const needed = relay + 1;
  if (max >= needed) return undefined;
  const holds = listens
    ? `its LISTEN holds one for good and each of its ${concurrency} rounds at once takes one`
    : `each of its ${concurrency} rounds at once takes one`;
  return {
    problem: `is on a pool of at most ${max} connection${max === 1 ? '' : 's'}, and the outbox relay alone needs ${relay} (${holds})`,
    fix: `Give the pool at least ${needed} (the relay's ${relay}, and one for your own transactions; pg's max, TypeORM's poolSize; more for an inbox, which holds one per handler call), lower outbox.concurrency, or set outbox.relay: false in this process.`,
  };
}
