import { applyDecorators, Get, Header, HttpCode, Post, SetMetadata } from '@nestjs/common';
import { DASHBOARD_ROUTE_KIND, type DashboardRouteKind } from './dashboard.constants.js';

/** A route's kind, which DashboardAccessGuard checks it by. */
const Kind = (kind: DashboardRouteKind) => SetMetadata(DASHBOARD_ROUTE_KIND, kind);
/** The page itself, at the mount path. */
export const Page = () => applyDecorators(Get(), Kind('page'), Header('content-type', 'text/html; charset=utf-8'));
/** One of the page's assets (script, stylesheet, icon), served with its content type. */
export const Asset = (path: string, type: string) => applyDecorators(Get(path), Kind('asset'), Header('content-type', type));
/** A read of the API: GET. */
export const Read = (path: string) => applyDecorators(Get(path), Kind('read'));
/** A state change through the API: POST, answered 200 (Nest's default for POST is 201). */
export const Write = (path: string) => applyDecorators(Post(path), Kind('write'), HttpCode(200));
