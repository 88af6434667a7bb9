/** AMQP reply codes the in-memory broker closes channels and connections with, as RabbitMQ names them. */
export const ReplyCode = {
  NOT_FOUND: 404,
  ACCESS_REFUSED: 403,
  RESOURCE_LOCKED: 405,
  PRECONDITION_FAILED: 406,
  COMMAND_INVALID: 503,
  INTERNAL_ERROR: 541,
} as const;

/** The broker's refusal of an operation: the channel (or, `connection`, the whole connection) closes with it. */
export class BrokerError extends Error {
  constructor(
    readonly code: number,
    /** RabbitMQ's text, e.g. `NOT_FOUND - no queue 'q' in vhost '/'`. */
    readonly text: string,
    readonly connection = false,
  ) {
    super(text);
    this.name = 'BrokerError';
  }

  /** amqplib's wording of a close frame, the code's name with dashes: `404 (NOT-FOUND) with message "NOT_FOUND - ..."`. */
  get closeMessage(): string {
    const name = Object.entries(ReplyCode)
      .find(([, code]) => code === this.code)?.[0]
      .replace(/_/g, '-');
    return `${this.code} (${name ?? 'ERROR'}) with message "${this.text}"`;
  }
}

/** An error as amqplib makes one of a close frame: `prefix` and the close's wording, with its code. */
const closeError = (prefix: string, error: BrokerError): Error =>
  Object.assign(new Error(`${prefix}${error.closeMessage}`), { code: error.code, classId: 0, methodId: 0 });

/** The error amqplib gives an operation the broker refused (`Operation failed: QueueDeclare; 404 (NOT-FOUND) ...`). */
export const operationError = (operation: string, error: BrokerError): Error => closeError(`Operation failed: ${operation}; `, error);

/** The error amqplib emits as a channel's 'error' when the broker closes it. */
export const channelClosedError = (error: BrokerError): Error => closeError('Channel closed by server: ', error);

/** The broker's refusal with `code`, worded as RabbitMQ words it: `NOT_FOUND - no queue 'q' in vhost '/'`. */
export const refusal = (code: keyof typeof ReplyCode, text: string, connection = false) =>
  new BrokerError(ReplyCode[code], `${code} - ${text}`, connection);
export const notFound = (kind: 'queue' | 'exchange', name: string) => refusal('NOT_FOUND', `no ${kind} '${name}' in vhost '/'`);
export const preconditionFailed = (text: string) => refusal('PRECONDITION_FAILED', text);
