import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `fn` every `everyMs` until it returns a truthy value; throws naming
 * `what` (and the last error `fn` threw) at the deadline, so every wait has
 * one. The one copy for the harness and the tests.
 */
export async function waitUntil<T>(
  what: string,
  fn: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs: number,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const why = last instanceof Error ? `: ${last.message}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    await sleep(everyMs);
  }
}
