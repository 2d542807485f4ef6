import type { CrashPoint } from './crash-points.types';

/** Where an attempt lets the harness in: the four crash points, and the pause before the submit. */
export type AttemptPoint = CrashPoint | 'before-submit';

/**
 * The harness's way into an attempt (docs/harness.md UC-03, UC-04): a port,
 * so production code has no crash or pause of its own. The executor runs with
 * NoAttemptHooks unless DLOCK_HARNESS=1 (app.module.ts).
 */
export abstract class AttemptHooks {
  /** Called as the attempt passes `point`; may pause (until `stop`) or end the process. */
  abstract reached(point: AttemptPoint, stop: AbortSignal): Promise<void>;
}

/** Production: nothing happens at any point. */
export class NoAttemptHooks extends AttemptHooks {
  reached(): Promise<void> {
    return Promise.resolve();
  }
}
