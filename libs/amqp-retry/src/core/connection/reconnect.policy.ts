/** How reconnection attempts are spaced: capped exponential backoff with jitter. */
export interface ReconnectPolicy {
  initialDelayMs: number;
  maxDelayMs: number;
  /** Growth per attempt; default 2. */
  factor?: number;
  /** Fraction of the delay drawn at random, 0..1; default 0.2. Spreads the reconnects of many processes. */
  jitter?: number;
}

/** The wait before reconnection attempt `attempt` (1-based): initial * factor^(attempt-1), capped at max, `jitter` of it random. */
export function reconnectDelay(attempt: number, policy: ReconnectPolicy, random: () => number = Math.random): number {
  const { initialDelayMs, maxDelayMs, factor = 2, jitter = 0.2 } = policy;
  const exponent = Math.min(Math.max(attempt - 1, 0), 64); // beyond this the cap wins anyway
  const base = Math.min(maxDelayMs, initialDelayMs * factor ** exponent);
  return Math.round(base * (1 - jitter) + base * jitter * random());
}
