/** The queue the shipping part of the example listens on, through the microservices transport (RetryServer). */
export const SHIPPING_QUEUE = 'example.shipping';
/** The client that sends to it: a RetryClient registered with ClientsModule. */
export const SHIPPING_CLIENT = 'SHIPPING_CLIENT';

/** An event: a paid order is ready to ship. */
export const SHIPMENT_REQUESTED = 'shipment.requested';
export interface ShipmentRequested {
  orderId: number;
}

/** A request: where is the shipment of an order? */
export const SHIPMENT_STATUS = 'shipment.status';
