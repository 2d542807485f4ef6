import { Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CrashPoint, ExecutorConfig } from '../../config';
import { AttemptHooks, type AttemptPoint } from '../domain/attempt-hooks.port';

function killSelf(): void {
  process.kill(process.pid, 'SIGKILL');
}

/**
 * The harness's crash and pause points (DLOCK_HARNESS=1 only; docs/executor.md
 * lists the knobs): EXECUTOR_CRASH_AT makes the worker SIGKILL itself at that
 * point, EXECUTOR_PAUSE_BEFORE_SUBMIT_MS widens the window before the submit's
 * own checks (UC-03).
 */
export class HarnessAttemptHooks extends AttemptHooks {
  private readonly logger = new Logger('harness');

  constructor(
    private readonly crashAt: CrashPoint | undefined,
    private readonly pauseBeforeSubmitMs: number,
    private readonly kill: () => void = killSelf,
  ) {
    super();
  }

  static fromConfig(config: ExecutorConfig): HarnessAttemptHooks {
    return new HarnessAttemptHooks(
      config.EXECUTOR_CRASH_AT,
      config.EXECUTOR_PAUSE_BEFORE_SUBMIT_MS,
    );
  }

  async reached(point: AttemptPoint, stop: AbortSignal): Promise<void> {
    if (point === this.crashAt) {
      this.logger.warn({ point }, 'harness crash point: SIGKILL');
      this.kill();
    }
    if (point === 'before-submit' && this.pauseBeforeSubmitMs > 0) {
      // A stop ends the pause early; the attempt's own stop check follows it.
      await sleep(this.pauseBeforeSubmitMs, undefined, { signal: stop }).catch(() => undefined);
    }
  }
}
