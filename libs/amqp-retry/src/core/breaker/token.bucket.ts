import type { RateLimitConfig } from './breaker.config.js';

/** A token bucket, pure: refilled evenly at `calls` per `perMs`, at most `burst` tokens, starting full; the caller passes the time. */
export class TokenBucket {
  private tokens: number;
  private at: number;

  constructor(
    private readonly config: RateLimitConfig,
    now: number,
  ) {
    this.tokens = config.burst;
    this.at = now;
  }

  /** Takes a token if there is one (returns 0); otherwise returns the milliseconds until one is there (at least 1). */
  take(now: number): number {
    const { calls, perMs, burst } = this.config;
    if (now > this.at) this.tokens = Math.min(burst, this.tokens + ((now - this.at) * calls) / perMs);
    this.at = now; // a clock that went back refills nothing, and counts on from there
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil(((1 - this.tokens) * perMs) / calls));
  }
}
