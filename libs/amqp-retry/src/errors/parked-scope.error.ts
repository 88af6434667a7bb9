/**
 * A parked-messages call names a handler queue or a parking queue outside the view's scope (another application's), or
 * a view was given no scope at all. Nothing was read or changed. `subject` is the name at fault (empty when the view
 * names nothing); `scope` says what the view looks at.
 */
export class ParkedScopeError extends Error {
  constructor(
    /** The handler queue or parking queue named outside the scope (empty when the view names nothing). */
    readonly subject: string,
    /** What the view looks at, in words. */
    readonly scope: string,
    message: string,
  ) {
    super(message);
    this.name = 'ParkedScopeError';
  }
}
