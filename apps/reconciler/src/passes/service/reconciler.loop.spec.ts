import { Logger } from '@nestjs/common';
import type { ReconcilerConfig } from '../../config';
import { ReconcilerLoops } from './reconciler.loop';

/** A pass that runs until its signal aborts, then rejects with the abort's reason. */
const untilStopped = (signal: AbortSignal) =>
  new Promise<void>((_, reject) =>
    signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true }),
  );

function loops(probe: (signal: AbortSignal) => Promise<void>) {
  const config = {
    RECONCILER_INTERVAL_MS: 60_000,
    RECONCILER_CHECK_INTERVAL_MS: 60_000,
    RECONCILER_SWEEP_INTERVAL_MS: 60_000,
    RECONCILER_AUDIT_INTERVAL_MS: 60_000,
    RECONCILER_FENCING_INTERVAL_MS: 60_000,
  } as ReconcilerConfig;
  const pass = { runPass: async () => undefined, runAll: async () => undefined };
  return new ReconcilerLoops(
    config,
    pass as never,
    pass as never,
    pass as never,
    { runPass: async () => undefined } as never,
    { probe } as never,
    pass as never,
  );
}

describe('ReconcilerLoops', () => {
  let errors: jest.SpyInstance;
  beforeEach(() => {
    errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
  });
  afterEach(() => errors.mockRestore());

  it('a token probe cut short by the shutdown is not logged as a failed loop', async () => {
    const l = loops(untilStopped);
    l.onApplicationBootstrap();
    await new Promise((r) => setImmediate(r));
    await l.beforeApplicationShutdown();
    expect(errors).not.toHaveBeenCalled();
  });

  it('a token probe that fails while running is logged as a failed loop', async () => {
    const l = loops(() => Promise.reject(new Error('lock-server down')));
    l.onApplicationBootstrap();
    await new Promise((r) => setImmediate(r));
    await l.beforeApplicationShutdown();
    expect(errors).toHaveBeenCalledWith(
      { loop: 'token-probe', err: 'lock-server down' },
      'loop iteration failed',
    );
  });
});
