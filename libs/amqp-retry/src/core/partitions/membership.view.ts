/** A member's announcement on the members' exchange (JSON body). */
export interface MemberAnnouncement {
  id: string;
  /** True when it stops: the others take its partitions over at once rather than after missed heartbeats. */
  leaving?: boolean;
}

/** Reads an announcement; anything else (another publisher's message) is undefined and ignored. */
export function readAnnouncement(content: Buffer): MemberAnnouncement | undefined {
  try {
    const value = JSON.parse(content.toString('utf8')) as unknown;
    if (typeof value !== 'object' || value === null) return undefined;
    const { id, leaving } = value as { id?: unknown; leaving?: unknown };
    if (typeof id !== 'string' || id === '' || id.length > 200) return undefined;
    return { id, leaving: leaving === true };
  } catch {
    return undefined;
  }
}

/**
 * Who is alive as this member hears it: itself, and each other until `expiryMs` after its last announcement, or it
 * leaves. A member hears its own announcements too; when it has not for `deafAfterMs` (its queue was cancelled, or the
 * members' exchange deleted under it), it is deaf: it cannot tell a member gone from one it does not hear, so nobody
 * expires until it hears itself again.
 */
export class MembershipView {
  private readonly lastSeen = new Map<string, number>();
  private selfHeardAt: number;

  constructor(
    readonly self: string,
    private readonly expiryMs: number,
    private readonly deafAfterMs: number,
    now: number,
  ) {
    this.selfHeardAt = now;
  }

  heard(announcement: MemberAnnouncement, now: number): void {
    if (announcement.id === this.self) {
      this.selfHeardAt = now;
      return;
    }
    if (announcement.leaving) this.lastSeen.delete(announcement.id);
    else this.lastSeen.set(announcement.id, now);
  }

  /** A listener (re)starts: it is given `deafAfterMs` to hear this member's next announcement. */
  listening(now: number): void {
    this.selfHeardAt = Math.max(this.selfHeardAt, now);
  }

  /** True when this member has not heard its own announcements for `deafAfterMs`. */
  isDeaf(now: number): boolean {
    return now - this.selfHeardAt > this.deafAfterMs;
  }

  /** The members alive at `now`, sorted, itself included; forgets those expired (none while deaf). */
  members(now: number): string[] {
    if (!this.isDeaf(now)) for (const [id, at] of this.lastSeen) if (now - at > this.expiryMs) this.lastSeen.delete(id);
    return [this.self, ...this.lastSeen.keys()].sort();
  }
}
