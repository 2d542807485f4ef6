import type { Logger } from '@nestjs/common';
import type { LockClientLogger } from '@dlock/lock-client';

/**
 * The SDK's logger on a Nest Logger. The SDK writes its own `event` field on
 * a loss; it is renamed `sdkEvent` here so the SafetyEvents line stays the
 * only one carrying `event=session_lost` (docs/lock-client.md).
 */
export function nestLockClientLogger(logger: Logger): LockClientLogger {
  const strip = (fields: Record<string, unknown>) => {
    if (!('event' in fields)) return fields;
    const { event, ...rest } = fields;
    return { ...rest, sdkEvent: event };
  };
  return {
    debug: (fields, message) => logger.debug(strip(fields), message),
    info: (fields, message) => logger.log(strip(fields), message),
    warn: (fields, message) => logger.warn(strip(fields), message),
    error: (fields, message) => logger.error(strip(fields), message),
  };
}
