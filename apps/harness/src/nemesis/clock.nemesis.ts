import { existsSync, writeFileSync } from 'node:fs';

/**
 * Clock faults for one process (docs/harness.md, "Clock faults"): Debian's
 * libfaketime, preloaded, changes what the process reads from its clocks; its
 * spec file is re-read every second, so a jump happens while it runs.
 *
 * - `skew` and `jump` move the wall clock only (`Date.now()`); the monotonic
 *   clock a process measures intervals with stays true, as on a host whose
 *   NTP daemon stepped the time.
 * - `rate` runs both clocks at a factor from the process's start: at 0.5 a
 *   worker's monotonic lease deadline (docs/lock-client.md) comes twice as
 *   late as it should, the paused-clock hazard fencing exists for.
 */

export const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

export type ClockFault =
  | { kind: 'skew'; offsetMs: number }
  | { kind: 'jump'; offsetMs: number }
  | { kind: 'rate'; factor: number };

export class ClockFaultError extends Error {}

/** libfaketime's spec: "+3600.000000" (an offset in seconds), "+0 x0.5" (a rate). */
function spec(fault: ClockFault | null): string {
  if (fault === null) return '+0';
  switch (fault.kind) {
    case 'skew':
    case 'jump': {
      const s = fault.offsetMs / 1000;
      return `${s >= 0 ? '+' : ''}${s.toFixed(3)}`;
    }
    case 'rate':
      return `+0 x${fault.factor}`;
    default: {
      const never: never = fault;
      throw new ClockFaultError(`unknown clock fault ${JSON.stringify(never)}`);
    }
  }
}

/**
 * The clock of one process: `env()` goes into its spawn, `set()` changes it
 * while it runs (a skew or jump), `clear()` puts the true time back.
 */
export class FakeClock {
  constructor(
    private readonly specFile: string,
    private readonly initial: ClockFault | null,
  ) {
    if (!existsSync(LIBFAKETIME))
      throw new ClockFaultError(`${LIBFAKETIME} is missing: apt-get install faketime`);
    if (initial?.kind === 'rate' && !(initial.factor > 0))
      throw new ClockFaultError(`a clock rate must be above 0, not ${initial.factor}`);
    writeFileSync(specFile, `${spec(initial)}\n`);
  }

  /** The variables that put this clock under the process. */
  env(): Record<string, string> {
    const env: Record<string, string> = {
      LD_PRELOAD: LIBFAKETIME,
      FAKETIME_TIMESTAMP_FILE: this.specFile,
      FAKETIME_CACHE_DURATION: '1',
    };
    // A rate bends the interval clock too; a skew or jump must not (it would go backwards).
    if (this.initial?.kind !== 'rate') env.FAKETIME_DONT_FAKE_MONOTONIC = '1';
    return env;
  }

  /** A skew or jump while the process runs (within a second); a rate is fixed at spawn. */
  set(fault: { kind: 'skew' | 'jump'; offsetMs: number }): void {
    if (this.initial?.kind === 'rate')
      throw new ClockFaultError('a clock started with a rate keeps it (a change would jump back)');
    writeFileSync(this.specFile, `${spec(fault)}\n`);
  }

  clear(): void {
    if (this.initial?.kind !== 'rate') writeFileSync(this.specFile, `${spec(null)}\n`);
  }
}
