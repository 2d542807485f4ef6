import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { activeTraceId, type HopTrace } from '@dlock/tracing';

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * Random ids are cut from a block of CSPRNG bytes refilled when used up: one
 * randomBytes call per request (for every request without a traceparent) was
 * a measurable share of the lock-server's per-request CPU. Same source, same
 * randomness; each byte is handed out once.
 */
const RANDOM_BLOCK_BYTES = 4096;
let randomBlock = randomBytes(RANDOM_BLOCK_BYTES);
let randomOffset = 0;

function randomHex(bytes: number): string {
  if (randomOffset + bytes > RANDOM_BLOCK_BYTES) {
    randomBlock = randomBytes(RANDOM_BLOCK_BYTES);
    randomOffset = 0;
  }
  const hex = randomBlock.toString('hex', randomOffset, randomOffset + bytes);
  randomOffset += bytes;
  return hex;
}

/** The W3C trace id of an incoming `traceparent`, or a fresh one. */
export function traceIdFrom(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  const match = value ? TRACEPARENT.exec(value.trim().toLowerCase()) : null;
  if (match && !/^0+$/.test(match[1])) return match[1];
  return randomHex(16);
}

export interface TracedRequest extends IncomingMessage {
  traceId?: string;
  /** With export off, the ids this hop continues or starts (set on arrival, libs/tracing). */
  hopTrace?: HopTrace;
}

/**
 * The trace id the request was given on arrival (set by the first
 * middleware): the one libs/tracing (export off) or OpenTelemetry's HTTP
 * instrumentation (export on) continued or started for it, or, where tracing
 * is not started (in-process tests), the header's own.
 */
export function requestTraceId(req: TracedRequest): string {
  if (!req.traceId) {
    req.traceId = req.hopTrace?.traceId ?? activeTraceId() ?? traceIdFrom(req.headers.traceparent);
  }
  return req.traceId;
}
