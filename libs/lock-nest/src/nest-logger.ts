import type { Logger } from '@nestjs/common';
import { DlockError, type LockClientLogger } from '@dlock/lock-client';

/**
 * The SDK's logger on a Nest Logger, one line per event: the message, then
 * the fields as `name=value`. Nest's console logger prints an object argument
 * as a multi-line `Object(n) {…}` block and an error with its whole stack;
 * here an error is its code and message (every one the SDK logs is expected
 * and typed). The SDK's own `event` field is written `sdkEvent`, so the
 * SafetyEvents line stays the only one carrying `event=session_lost`
 * (docs/lock-client.md).
 */
export function nestLockClientLogger(logger: Logger): LockClientLogger {
  return {
    debug: (fields, message) => logger.debug(logLine(message, fields)),
    info: (fields, message) => logger.log(logLine(message, fields)),
    warn: (fields, message) => logger.warn(logLine(message, fields)),
    error: (fields, message) => logger.error(logLine(message, fields)),
  };
}

/** `message name=value …`; undefined fields left out, errors as `code: message`. */
export function logLine(message: string, fields: Record<string, unknown> = {}): string {
  const pairs = Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => `${name === 'event' ? 'sdkEvent' : name}=${fieldText(value)}`);
  return [message, ...pairs].join(' ');
}

function fieldText(value: unknown): string {
  if (value instanceof DlockError) return JSON.stringify(`${value.code}: ${value.message}`);
  if (value instanceof Error) return JSON.stringify(value.message);
  if (typeof value === 'string') return /^[\w:.\-/]+$/.test(value) ? value : JSON.stringify(value);
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'object' && value !== null)
    return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  return String(value);
}
