import { Injectable, Logger } from '@nestjs/common';

/** Counts settled orders so the example can say when it is done (and exit, with EXAMPLE_EXIT_WHEN_DONE=1). */
@Injectable()
export class OrderProgress {
  private readonly logger = new Logger('Example');
  private readonly outcome = new Map<number, 'paid' | 'parked'>();
  private expected = 0;
  private resolveDone: () => void = () => undefined;
  readonly done = new Promise<void>((resolve) => (this.resolveDone = resolve));

  expect(count: number): void {
    this.expected = count;
  }

  settled(id: number, how: 'paid' | 'parked'): void {
    this.outcome.set(id, how);
    if (this.outcome.size < this.expected) return;
    const parked = [...this.outcome].filter(([, h]) => h === 'parked').map(([orderId]) => orderId);
    this.logger.log(
      `all ${this.expected} orders settled: ${this.expected - parked.length} paid, parked: [${parked.join(', ')}] (see queue example.orders.payment.error)`,
    );
    this.resolveDone();
  }
}
