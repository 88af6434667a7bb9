/**
 * A replay or a purge given `expected` (the count the operator confirmed) found another number of matching messages:
 * messages were parked, replayed or purged since. Nothing was changed; count again, confirm again.
 */
export class ParkedCountChangedError extends Error {
  constructor(
    /** The parking queue acted on. */
    readonly errorQueue: string,
    /** The count the operator confirmed. */
    readonly expected: number,
    /** The count now. */
    readonly matched: number,
  ) {
    super(
      `${matched} parked message(s) of ${JSON.stringify(errorQueue)} match now, not the ${expected} confirmed (messages were parked, replayed or purged since); nothing was changed. Count again and confirm ${matched}`,
    );
    this.name = 'ParkedCountChangedError';
  }
}
