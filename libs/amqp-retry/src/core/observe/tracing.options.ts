/** Options of the OpenTelemetry tracing (`RetryModule.forRoot({ tracing })`, or `createTracingObserver()` without Nest). */
export interface TracingOptions {
  /** The name the library's tracer is got with; default 'nestjs-amqp-retry'. */
  tracerName?: string;
}
