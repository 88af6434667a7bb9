/** The event the shop publishes when an order is placed. */
export interface OrderCreated {
  id: number;
  customer: string;
  amountCents: number;
}

export const ORDERS_EXCHANGE = 'example.orders';
export const ORDER_CREATED = 'order.created';
