import { Injectable, Logger } from '@nestjs/common';

/**
 * Counts settled orders and reached payment deadlines so the example can say when it is done (and exit, with
 * EXAMPLE_EXIT_WHEN_DONE=1).
 */
@Injectable()
export class OrderProgress {
  private readonly logger = new Logger('Example');
  private readonly outcome = new Map<number, 'paid' | 'parked'>();
  private readonly deadlines = new Set<number>();
  private expectedOrders = 0;
  private expectedDeadlines = 0;
  private resolveDone: () => void = () => undefined;
  readonly done = new Promise<void>((resolve) => (this.resolveDone = resolve));

  expect(orders: number, deadlines: number): void {
    this.expectedOrders = orders;
    this.expectedDeadlines = deadlines;
  }

  outcomeOf(id: number): string | undefined {
    const how = this.outcome.get(id);
    return how && (how === 'paid' ? 'already paid' : 'payment parked');
  }

  settled(id: number, how: 'paid' | 'parked'): void {
    this.outcome.set(id, how);
    this.checkDone();
  }

  deadlineReached(id: number): void {
    this.deadlines.add(id);
    this.checkDone();
  }

  private checkDone(): void {
    if (this.outcome.size < this.expectedOrders || this.deadlines.size < this.expectedDeadlines) return;
    const parked = [...this.outcome].filter(([, how]) => how === 'parked').map(([id]) => id);
    this.logger.log(
      `all ${this.expectedOrders} orders settled: ${this.expectedOrders - parked.length} paid, parked: [${parked.join(', ')}] ` +
        '(see queue example.orders.payment.error); every payment deadline delivered',
    );
    this.resolveDone();
  }
}
