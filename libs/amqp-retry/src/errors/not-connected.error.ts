/** The connection to RabbitMQ is down (the library is reconnecting) or closed. */
export class NotConnectedError extends Error {
  constructor(reason: string) {
    super(`Not connected to RabbitMQ: ${reason}`);
    this.name = 'NotConnectedError';
  }
}
