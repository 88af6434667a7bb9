/** The dashboard's checked configuration (DashboardConfig). */
export const DASHBOARD_CONFIG = 'nestjs-amqp-retry:dashboard-config';
/** What a route of the dashboard is, for the access guard (DashboardRouteKind). */
export const DASHBOARD_ROUTE_KIND = 'nestjs-amqp-retry:dashboard-route';

/** page: the HTML; asset: script and style; read: API GETs; write: API POSTs that change state. */
export type DashboardRouteKind = 'page' | 'asset' | 'read' | 'write';
