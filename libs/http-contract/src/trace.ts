import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** The W3C trace id of an incoming `traceparent`, or a fresh one. */
export function traceIdFrom(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  const match = value ? TRACEPARENT.exec(value.trim().toLowerCase()) : null;
  if (match && !/^0+$/.test(match[1])) return match[1];
  return randomBytes(16).toString('hex');
}

/** A `traceparent` header to send downstream for the given trace id. */
export function traceparentFor(traceId: string): string {
  return `00-${traceId}-${randomBytes(8).toString('hex')}-01`;
}

export interface TracedRequest extends IncomingMessage {
  traceId?: string;
}

/** The trace id the request was given on arrival (set by the body/trace middleware). */
export function requestTraceId(req: TracedRequest): string {
  if (!req.traceId) req.traceId = traceIdFrom(req.headers.traceparent);
  return req.traceId;
}
