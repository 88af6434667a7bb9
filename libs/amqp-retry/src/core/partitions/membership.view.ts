import { readRecordFields } from '../topology/json-record.reader.js';
import type { PartitionMember } from './partition.plan.js';
import { MAX_PARTITIONS } from './partitions.config.js';

/**
 * A member's announcement on the members' exchange (JSON body): its id, count and readiness as PartitionMember says,
 * and `leaving` when it stops: the others take its partitions over at once rather than after missed heartbeats.
 */
export type MemberAnnouncement = PartitionMember & { leaving?: boolean };

/**
 * Reads an announcement; anything else (another publisher's message) is undefined and ignored. A count that is not a
 * whole number from 1 to the most partitions is read as none said.
 */
export function readAnnouncement(content: Buffer): MemberAnnouncement | undefined {
  const { id, leaving, count, ready } = readRecordFields(content);
  if (typeof id !== 'string' || id === '' || id.length > 200) return undefined;
  const counted = typeof count === 'number' && Number.isInteger(count) && count >= 1 && count <= MAX_PARTITIONS;
  return { id, leaving: leaving === true, ...(counted ? { count } : {}), ...(ready === false ? { ready: false } : {}) };
}

/**
 * Most other members a view keeps: far more instances than a handler runs (its partitions number 256 at most), few
 * enough that a flood of announcements with made-up ids (from the application's own broker user: no other user's is
 * heard, engine/partition.membership.ts) costs a bounded map; an id beyond it is not heard until some member expires.
 */
export const MAX_MEMBERS = 1_000;

/**
 * What `heard` did with an announcement: `full` when it came from a member it did not know while it kept MAX_MEMBERS;
 * `ready` when a member alive before says it has taken its first share (it may be given partitions from now on).
 */
export type HeardOutcome = 'new' | 'known' | 'full' | 'ready';

/**
 * Who is alive as this member hears it: itself, and each other until `expiryMs` after its last announcement, or it
 * leaves. A member hears its own announcements too, and only trusts what it hears (or does not hear) while they come
 * back: since its listener (re)started, and within `deafAfterMs`. Else (its queue cancelled, the members' exchange
 * deleted, a reconnection) it cannot tell a member gone from one it does not hear, so nobody expires; and when it
 * hears itself again, each other member gets a fresh `expiryMs` to be heard.
 */
export class MembershipView {
  /** Each other member: when it was last heard, the count it announced, and false while it said it is not ready. */
  private readonly lastSeen = new Map<string, { at: number; count?: number; ready?: false }>();
  /** The members, sorted, as `members` last returned them: kept until one comes or goes (each message must not sort them). */
  private sorted?: string[];
  private selfHeardAt = Number.NEGATIVE_INFINITY;
  private listeningSince: number;
  private heardSinceListening = false;

  constructor(
    readonly self: string,
    private readonly expiryMs: number,
    private readonly deafAfterMs: number,
    now: number,
    /** Its own count, for `running`. */
    private readonly selfCount?: number,
  ) {
    this.listeningSince = now;
  }

  /** Takes an announcement in; `new` when its member was not alive at `now` before. */
  heard(announcement: MemberAnnouncement, now: number): HeardOutcome {
    const { id } = announcement;
    if (id === this.self) {
      if (!this.hears(now)) for (const seen of this.lastSeen.values()) seen.at = now;
      this.selfHeardAt = now;
      this.heardSinceListening = true;
      return 'known';
    }
    const known = this.isAlive(id, now);
    if (announcement.leaving) {
      if (this.lastSeen.delete(id)) this.sorted = undefined;
      return known ? 'known' : 'new';
    }
    const before = this.lastSeen.get(id);
    if (!before) {
      if (this.lastSeen.size >= MAX_MEMBERS) return 'full';
      this.sorted = undefined;
    }
    const ready = announcement.ready === false ? false : undefined;
    this.lastSeen.set(id, { at: now, count: announcement.count, ready });
    if (!known) return 'new';
    return before?.ready === false && ready === undefined ? 'ready' : 'known';
  }

  /** Whether `id` is among `members(now)`, without listing them. */
  private isAlive(id: string, now: number): boolean {
    const seen = this.lastSeen.get(id);
    return seen !== undefined && (now - seen.at <= this.expiryMs || !this.hears(now));
  }

  /** A listener (re)starts (or is about to): what it hears counts once its own announcement comes back. */
  listening(now: number): void {
    this.listeningSince = now;
    this.heardSinceListening = false;
  }

  /** True when its own announcements come back: heard since the listener started, within `deafAfterMs`. */
  hears(now: number): boolean {
    return this.heardSinceListening && now - this.selfHeardAt <= this.deafAfterMs;
  }

  /** True when nothing of its own has come back for `deafAfterMs`: since the last it heard, or since the listener started. */
  isDeaf(now: number): boolean {
    return now - Math.max(this.selfHeardAt, this.listeningSince) > this.deafAfterMs;
  }

  /** The members alive at `now`, sorted, itself included; forgets those expired (only while it hears itself). */
  members(now: number): string[] {
    if (this.hears(now)) for (const [id, { at }] of this.lastSeen) if (now - at > this.expiryMs && this.lastSeen.delete(id)) this.sorted = undefined;
    this.sorted ??= [this.self, ...this.lastSeen.keys()].sort();
    return [...this.sorted];
  }

  /**
   * The members alive at `now` (as `members`), each with the count it announced, and `ready: false` while it said it has
   * not taken its first share: what the partitions are spread by. Itself is listed ready.
   */
  running(now: number): PartitionMember[] {
    return this.members(now).map((id) => {
      if (id === this.self) return { id, count: this.selfCount };
      const seen = this.lastSeen.get(id);
      return { id, count: seen?.count, ...(seen?.ready === false ? { ready: false } : {}) };
    });
  }
}
