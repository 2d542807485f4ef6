import { setTimeout as delay } from 'node:timers/promises';
import { inRootSpan } from '@dlock/tracing';

/**
 * Runs `work` now, then again `intervalMs` after each run ends (fixed delay,
 * never overlapping). stop() aborts the wait and the run's signal, and
 * resolves once the run in flight has returned.
 */
export class FixedDelayLoop {
  private readonly abort = new AbortController();
  private running: Promise<void> | undefined;

  constructor(
    private readonly name: string,
    private readonly intervalMs: number,
    private readonly work: (signal: AbortSignal) => Promise<void>,
    private readonly onError: (name: string, err: unknown) => void,
  ) {}

  start(): void {
    this.running ??= this.loop();
  }

  async stop(): Promise<void> {
    this.abort.abort(new Error(`${this.name} stopping`));
    await this.running;
  }

  private async loop(): Promise<void> {
    const signal = this.abort.signal;
    while (!signal.aborted) {
      // One trace per iteration: its calls and log lines, its error included, share one trace id.
      await inRootSpan(`reconciler ${this.name}`, { 'dlock.loop': this.name }, async () => {
        try {
          await this.work(signal);
        } catch (err) {
          if (!signal.aborted) this.onError(this.name, err);
        }
      });
      await delay(this.intervalMs, undefined, { signal }).catch(() => undefined);
    }
  }
}
