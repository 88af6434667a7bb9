/** Public types of the parked-messages API, shared by the CLI and the dashboard: plain data that survives JSON.stringify. */

/** Which parked messages an operation looks at. Every field narrows; an empty filter matches all. */
export interface ParkedFilter {
  /**
   * The handler queue the message failed in (its `x-original-queue`; without it, as ParkedMessageView.queue reads it);
   * `''`: the messages whose queue is unknown.
   */
  queue?: string;
  /** The parking queue to list or summarize; default: that of `queue`, else every parking queue in view. */
  errorQueue?: string;
  /** The park reason, exactly: `exhausted`, `non-retryable`, `malformed`, `redelivery-limit`, `expired`, `maxlen`, `undeliverable`, `no-handler`. */
  reason?: string;
  /** A case-insensitive substring of the exception message. */
  error?: string;
  /** Parked at or after this time. */
  since?: Date;
  /** Parked before this time. */
  until?: Date;
  /** A case-insensitive substring of the body (decoded as UTF-8; a binary body never matches). */
  text?: string;
  /** A failure group's key (FailureGroup.key): its messages only. */
  group?: string;
  /** The message's `messageId` property, exactly. */
  messageId?: string;
  /** The message's `correlationId` property, exactly. */
  correlationId?: string;
}

/** One parked message as an operator reads it. */
export interface ParkedMessageView {
  /** Stable id: the `x-parked-id` header written at park time, else a digest of the body and properties. */
  id: string;
  /**
   * The handler queue it failed in; a replay goes there. Without `x-original-queue` (parked by an old version): the one
   * queue that parks in its parking queue; empty when two do (or none is known), for a message the library did not
   * park (no `x-parked-reason`), and for one whose `x-original-queue` no replay may go to (`unreplayable`).
   */
  queue: string;
  /**
   * Set when its `x-original-queue` names a queue no replay of this view goes to (not a handler queue in its scope, or a
   * queue of the library): why. A replay leaves it parked, saying so.
   */
  unreplayable?: string;
  /** The parking queue holding it. */
  errorQueue: string;
  /** `x-parked-reason`. */
  reason: string;
  /** `x-exception-message`. */
  error: string;
  /** `x-parked-at`, when readable. */
  parkedAt?: Date;
  /** Handler calls made before it was parked (`x-retry-attempts`). */
  attempts?: number;
  /** The body: UTF-8 text when it is valid UTF-8, else base64. */
  body: string;
  /** How `body` is written: `utf8` when the body is valid UTF-8, else `base64`. */
  bodyEncoding: 'utf8' | 'base64';
  /** The whole body's size in bytes; set on a listing asked with `PageRequest.bodyPreviewBytes`. */
  bodyBytes?: number;
  /**
   * True when `body` holds only the first bytes of the body (a listing asked with `PageRequest.bodyPreviewBytes`):
   * `show()` and `export()` give it whole.
   */
  bodyTruncated?: boolean;
  /** Every AMQP property but `headers` (contentType, messageId, timestamp, ...). */
  properties: Record<string, unknown>;
  /** Every header, the library's parking headers included. Buffers are shown as base64 strings. */
  headers: Record<string, unknown>;
  /** The death history the message had before it was parked (`x-retry-death-history`), oldest event last. */
  deaths: unknown[];
}

/** A handler queue, its tiers and its parking queue, with their depths (ready messages). */
export interface HandlerQueueState {
  /** The handler queue (or the delay ladder's ready queue). */
  queue: string;
  /** `handler`, or `delay-ladder` for a delay ladder's ready queue, whose parked messages are undeliverable delayed messages. */
  role: 'handler' | 'delay-ladder';
  /** Ready messages in the handler queue; -1 when the queue does not exist. */
  messages: number;
  /** Consumers of the queue, as the broker counts them (every instance's); absent when the queue does not exist. */
  consumers?: number;
  /** Deliveries this instance has taken from the queue and not yet settled; only for the application's own queues. */
  inFlight?: number;
  /** Messages this instance handled, retried and parked since its page first asked; only for the application's own queues. */
  activity?: {
    /** Messages handled and acked. */
    handled: number;
    /** Messages sent to a tier for a retry. */
    retried: number;
    /** Messages parked. */
    parked: number;
  };
  /** A word on the queue's consuming state (for example "paused" or "breaker open"), shown in the page's State column. */
  state?: string;
  /** Tier queues, tier 1 first, with the messages waiting in each; the tiers of patterns with a schedule of their own too. */
  tiers: {
    /** The tier queue. */
    queue: string;
    /** Messages waiting in it for their delay to end. */
    messages: number;
  }[];
  /** The parking queue of the handler queue. */
  errorQueue: string;
  /**
   * Ready messages in the parking queue (what AMQP reports); -1 when it does not exist. Messages held unacked by a walk
   * (a list, an export, a replay, here or in another process) are not counted until it gives them back.
   */
  parked: number;
}

/** The parked messages that match a filter, counted by reason and by exception message. */
export interface ParkedSummary {
  /** Matching parked messages in all. */
  total: number;
  /** Largest count first. */
  byReason: {
    /** The park reason (`x-parked-reason`). */
    reason: string;
    /** Matching messages parked for it. */
    count: number;
  }[];
  /** Largest count first; exception messages grouped as written. */
  byError: {
    /** The exception message (`x-exception-message`). */
    error: string;
    /** Matching messages parked with it. */
    count: number;
  }[];
  /** Failure groups (queue, reason, normalized error, top stack frame), largest first, at most 200; asked with `{ groups: true }`. */
  groups?: FailureGroup[];
  /** When the oldest matching message was parked, if any says; asked with `{ groups: true }`. */
  oldestParkedAt?: Date;
}

/**
 * Parked messages that failed alike, as one unit of work: the same parking and handler queue, reason, exception
 * message once ids, numbers and addresses are masked, and top stack frame. Replayed or purged as a whole by its key.
 */
export interface FailureGroup {
  /** Stable key of the group: give it as the filter's `group` to act on the group's messages. */
  key: string;
  /** The handler queue its messages failed in. */
  queue: string;
  /** The parking queue holding them. */
  errorQueue: string;
  /** The park reason. */
  reason: string;
  /** The exception message with ids, numbers and addresses masked (`<id>`, `<n>`, `<ip>`, `<email>`). */
  error: string;
  /** The first frame of the stack trace (`x-exception-stack`), '' without one. */
  frame: string;
  /** Messages in the group. */
  count: number;
  /** The earliest `x-parked-at` in the group. */
  firstSeen?: Date;
  /** The latest `x-parked-at` in the group. */
  lastSeen?: Date;
  /** One message of the group: its id and its exception message as written. */
  sample: {
    /** The message's id (ParkedMessageView.id). */
    id: string;
    /** Its exception message, unmasked. */
    error: string;
  };
}

/** Which page of the matching messages a listing returns. */
export interface PageRequest {
  /** Skip this many matching messages (default 0). */
  offset?: number;
  /** Return at most this many (default 50). */
  limit?: number;
  /**
   * Cut each listed body to at most this many bytes (a UTF-8 body at a character boundary, a binary one at a base64
   * group), saying its whole size in `bodyBytes` and the cut in `bodyTruncated`; default: whole bodies. The filter's
   * `text` matches the whole body either way.
   */
  bodyPreviewBytes?: number;
}

/** One page of a listing of parked messages. */
export interface ParkedPage {
  /** Matching messages in all (not only this page). */
  total: number;
  /** The page's messages, in the parking queue's order. */
  items: ParkedMessageView[];
}

/** What a replay, a purge or an export acts on: in one parking queue, the given ids and/or those matching a filter. */
export interface ParkedSelection {
  /** The parking queue acted on. */
  errorQueue: string;
  /** Only these ids (and, if a filter is given too, only those of them that match it). */
  ids?: string[];
  /** Only the messages that match it (and, if `ids` is given too, only those of them). */
  filter?: ParkedFilter;
}

/** How a replay, a purge or an export runs. */
export interface OperationOptions {
  /** Count what would be done, change nothing. */
  dryRun?: boolean;
  /**
   * For a replay or a purge: the count of matching messages the operator was shown and confirmed (a dry run's
   * `matched`). The matches are counted again first; when they differ, nothing is changed and ParkedCountChangedError
   * names the count now. Else at most this many are acted on, the first in queue order: a message parked meanwhile
   * (at the tail) is left parked.
   */
  expected?: number;
  /** Called after each message looked at: `done` of `total` (the depth of the parking queue when it started). */
  onProgress?: (done: number, total: number) => void;
}

/** What a replay did. */
export interface ReplayResult {
  /** Messages that matched the selection. */
  matched: number;
  /** Published to their queue, confirmed, and removed from the parking queue (0 on a dry run). */
  replayed: number;
  /**
   * Matched but left parked, with why: no known target queue, target missing, the copy refused (nacked), or unconfirmed
   * because its channel closed before the confirm, a lost connection say (that copy may have been delivered: look
   * before replaying again).
   */
  failed: {
    /** The message's id. */
    id: string;
    /** Why it was left parked. */
    error: string;
  }[];
  /** Whether it was a dry run (nothing changed). */
  dryRun: boolean;
}

/** What a purge did. */
export interface PurgeResult {
  /** Messages that matched the selection. */
  matched: number;
  /** Removed from the parking queue (0 on a dry run). */
  purged: number;
  /** Whether it was a dry run (nothing changed). */
  dryRun: boolean;
}

/** How a parked message is replayed with a corrected body. */
export interface EditReplayOptions {
  /** A new content type for the corrected body (else the original's). */
  contentType?: string;
  /** Find the message and count it (`matched`), change nothing. */
  dryRun?: boolean;
}

/**
 * Where ParkedMessages connects, and which handler queues it may see and act on. One made with `connect()` sees the
 * queues named here (at least one of `queues`, `application` and `wholeVhost`); RetryModule's sees its application's.
 * Naming a queue outside the scope throws ParkedScopeError, and nothing is read or changed.
 */
export interface ParkedMessagesOptions {
  /** amqp(s):// URL, or the nodes of a cluster comma-separated (the first that answers). Default: AMQP_URL, else amqp://guest:guest@localhost:5672. */
  url?: string;
  /** Handler queues to look at: a name (its parking queue is the recorded one, else `<queue>.error`) or `{ queue, errorQueue }`. */
  queues?: (
    | string
    | {
        /** The handler queue. */
        queue: string;
        /** Its parking queue (default: the recorded one, else `<queue>.error`). */
        errorQueue?: string;
      }
  )[];
  /** The handler queues recorded on the broker by the applications of this name (RetryModule option `application`). */
  application?: string;
  /** Every handler queue recorded on the vhost, and any parking queue named in a call. Default false. */
  wholeVhost?: boolean;
}
