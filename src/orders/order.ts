/** The event the shop publishes when an order is placed. */
export interface OrderCreated {
  id: number;
  customer: string;
  amountCents: number;
}

export const ORDERS_EXCHANGE = 'example.orders';
export const ORDER_CREATED = 'order.created';

/** Published with a delay when the order is created: the moment an unpaid order would be cancelled. */
export interface PaymentDeadline {
  orderId: number;
}

export const PAYMENT_DEADLINE = 'order.payment-deadline';
