import { readRecordFields } from '../topology/json-record.reader.js';

/** A member's announcement on the members' exchange (JSON body). */
export interface MemberAnnouncement {
  id: string;
  /** True when it stops: the others take its partitions over at once rather than after missed heartbeats. */
  leaving?: boolean;
}

/** Reads an announcement; anything else (another publisher's message) is undefined and ignored. */
export function readAnnouncement(content: Buffer): MemberAnnouncement | undefined {
  const { id, leaving } = readRecordFields(content);
  if (typeof id !== 'string' || id === '' || id.length > 200) return undefined;
  return { id, leaving: leaving === true };
}

/**
 * Who is alive as this member hears it: itself, and each other until `expiryMs` after its last announcement, or it
 * leaves. A member hears its own announcements too, and only trusts what it hears (or does not hear) while they come
 * back: since its listener (re)started, and within `deafAfterMs`. Else (its queue cancelled, the members' exchange
 * deleted, a reconnection) it cannot tell a member gone from one it does not hear, so nobody expires; and when it
 * hears itself again, each other member gets a fresh `expiryMs` to be heard.
 */
export class MembershipView {
  private readonly lastSeen = new Map<string, number>();
  private selfHeardAt = Number.NEGATIVE_INFINITY;
  private listeningSince: number;
  private heardSinceListening = false;

  constructor(
    readonly self: string,
    private readonly expiryMs: number,
    private readonly deafAfterMs: number,
    now: number,
  ) {
    this.listeningSince = now;
  }

  heard(announcement: MemberAnnouncement, now: number): void {
    if (announcement.id === this.self) {
      if (!this.hears(now)) for (const id of this.lastSeen.keys()) this.lastSeen.set(id, now);
      this.selfHeardAt = now;
      this.heardSinceListening = true;
      return;
    }
    if (announcement.leaving) this.lastSeen.delete(announcement.id);
    else this.lastSeen.set(announcement.id, now);
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
    if (this.hears(now)) for (const [id, at] of this.lastSeen) if (now - at > this.expiryMs) this.lastSeen.delete(id);
    return [this.self, ...this.lastSeen.keys()].sort();
  }
}
