// What a measured process needs from a contender. A declaration file, so that the ESM contenders here and the
// CommonJS ones in peers/ (Nest 11) share it as a type without compiling it twice.

/** The body the bench publishes; each contender's `encode` wraps it the way its own publishers would. */
export interface BenchBody {
  id: number;
}

/**
 * Options a contender of this library adds to its defaults for one measured variant (bench/scenarios/variants.ts):
 * RetryModule.forRoot or RetryServer options, the handler's @RetryWithBackoff options, a pattern's `retry` policy.
 */
export interface VariantOptions {
  module?: Record<string, unknown>;
  handler?: Record<string, unknown>;
  pattern?: Record<string, unknown>;
  /** The retry console's module (RetryDashboardModule.forRoot's options) imported beside RetryModule. */
  console?: Record<string, unknown>;
}

export interface ConsumerOptions {
  url: string;
  /** Absent: the contender as an application would use it by default. */
  variant?: VariantOptions;
  queue: string;
  prefetch: number;
  /** Delay of the single retry tier, for contenders that retry. */
  retryDelayMs: number;
  /**
   * The work, called once per delivery with the decoded body and the 1-based attempt; throwing fails the attempt
   * (a contender without retries never sees it throw).
   */
  handle(body: BenchBody, attempt: number): void;
}

export interface RunningConsumer {
  /** Stops consuming and closes the connection; deliveries not yet acked go back to the queue. */
  stop(): Promise<void>;
}

export interface Contender {
  /** Declares what the contender declares in a real application (its queue at least), then consumes. */
  start(options: ConsumerOptions): Promise<RunningConsumer>;
}

export interface PublisherOptions {
  url: string;
}

export interface RunningPublisher {
  /** Publishes `body` as JSON, persistent, and settles on the broker's confirm (rejects on a nack or a failure). */
  publish(exchange: string, routingKey: string, body: BenchBody): Promise<void>;
  /** Closes the connection; called once every publish has settled. */
  stop(): Promise<void>;
}

/** A contender of the publish scenario: ready to publish once `start` resolves (connection and channel open). */
export interface PublisherContender {
  start(options: PublisherOptions): Promise<RunningPublisher>;
}
