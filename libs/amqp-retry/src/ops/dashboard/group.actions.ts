import { Injectable } from '@nestjs/common';

/** One replay or purge of a failure group, as the page records it. */
export interface GroupAction {
  /** When it was done (ISO 8601). */
  at: string;
  /** Who did it: the name the guard put on the request, else the one typed on the page. */
  by: string;
  action: 'replay' | 'purge';
  /** The group's key, parking queue and what it was (its normalized error). */
  group: string;
  errorQueue: string;
  error: string;
  /** Messages of the group found, and those replayed or purged. */
  matched: number;
  done: number;
  /** Messages left parked (a replay the broker did not confirm, or whose queue is gone). */
  failed: number;
  /** Why it stopped part-way (its channel or connection closed), the counts above being what it did before. */
  stopped?: string;
}

/** Most group actions kept (the newest). */
export const MAX_GROUP_ACTIONS = 200;

/**
 * The failure groups' history: who replayed or purged which group, when, and how many came back. Kept in memory by
 * the instance serving the page (each instance its own), newest first, at most MAX_GROUP_ACTIONS; every action is also
 * logged.
 */
@Injectable()
export class GroupActions {
  private readonly actions: GroupAction[] = [];

  record(action: GroupAction): void {
    this.actions.unshift(action);
    this.actions.length = Math.min(this.actions.length, MAX_GROUP_ACTIONS);
  }

  list(): GroupAction[] {
    return this.actions.map((a) => ({ ...a }));
  }
}
