import type { ReplyAddressState } from './reply-address.rules.js';
import { keepNewest } from './known-targets.js';

/**
 * How long an answer about a direct reply-to address is trusted without asking the broker again, in ms. 'exists' only
 * briefly: a caller that leaves within that time loses a reply without a warning (a publish to its address is
 * confirmed and dropped), so that a client's many requests cost one probe every few seconds, not one each. 'gone' and
 * 'refused' do not change (an address names its caller's channel process, which never comes back), so they are kept
 * until the oldest are forgotten. 'unknown' (the broker could not be asked) is not kept.
 */
export const REPLY_ADDRESS_TRUSTED_MS: Readonly<Record<ReplyAddressState['kind'], number>> = {
  exists: 2_000,
  gone: Infinity,
  refused: Infinity,
  unknown: 0,
};

/** How many addresses are remembered of each kind (lasting, brief); the oldest answer is forgotten first (any client chooses its `replyTo`). */
export const REPLY_ADDRESSES_KEPT = 1_000;

/**
 * The broker's recent answers about direct reply-to addresses, bounded in number; `now` is the caller's clock. The
 * lasting answers ('gone', 'refused') are kept apart from the brief ones ('exists'): many honest callers do not push a
 * forged address out, which would cost a reconnection each time it is sent again.
 */
export class ReplyAddressMemory {
  private readonly lasting = new Map<string, ReplyAddressState>();
  private readonly brief = new Map<string, { state: ReplyAddressState; until: number }>();

  constructor(private readonly capacity = REPLY_ADDRESSES_KEPT) {}

  /** The answer about `address` still trusted at `now`, or undefined: ask the broker. */
  recall(address: string, now: number): ReplyAddressState | undefined {
    const lasting = this.lasting.get(address);
    if (lasting !== undefined) return lasting;
    const entry = this.brief.get(address);
    if (entry === undefined) return undefined;
    if (now < entry.until) return entry.state;
    this.brief.delete(address);
    return undefined;
  }

  /** Keeps `state` (the broker's answer at `now`) for its kind's time; returns it. */
  remember(address: string, state: ReplyAddressState, now: number): ReplyAddressState {
    const trustedMs = REPLY_ADDRESS_TRUSTED_MS[state.kind];
    if (trustedMs <= 0) return state;
    this.brief.delete(address);
    if (trustedMs === Infinity) keepNewest(this.lasting, address, state, this.capacity);
    else keepNewest(this.brief, address, { state, until: now + trustedMs }, this.capacity);
    return state;
  }
}
