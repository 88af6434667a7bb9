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

/** Who is alive as this member hears it: itself, and each other until `expiryMs` after its last announcement, or it leaves. */
export class MembershipView {
  private readonly lastSeen = new Map<string, number>();

  constructor(
    readonly self: string,
    private readonly expiryMs: number,
  ) {}

  heard(announcement: MemberAnnouncement, now: number): void {
    if (announcement.id === this.self) return;
    if (announcement.leaving) this.lastSeen.delete(announcement.id);
    else this.lastSeen.set(announcement.id, now);
  }

  /** The members alive at `now`, sorted, itself included; forgets those expired. */
  members(now: number): string[] {
    for (const [id, at] of this.lastSeen) if (now - at > this.expiryMs) this.lastSeen.delete(id);
    return [this.self, ...this.lastSeen.keys()].sort();
  }
}
