/**
 * Measurement discipline (README.md, "Benchmarks"): a committed report is a
 * measurement only if the machine was quiet when the bench began. Every
 * bench that writes a report starts with `loadGate()`: above the threshold
 * (BENCH_LOAD_MAX, default 1.5, the 1-minute load average) it refuses to run,
 * unless BENCH_NOISY=1, and then the report says at its top that it is noise.
 */
import os from 'node:os';

export const LOAD_MAX_DEFAULT = 1.5;

export interface LoadGate {
  /** 1-minute load average when the bench began. */
  before: number;
  max: number;
  /** Started above the threshold, forced with BENCH_NOISY=1. */
  noisy: boolean;
}

/** Exit code of a refused start: the machine is busy. */
export const BUSY_EXIT_CODE = 3;

export function loadGate(bench: string, env: NodeJS.ProcessEnv = process.env): LoadGate {
  const max = Number(env.BENCH_LOAD_MAX ?? LOAD_MAX_DEFAULT);
  const before = os.loadavg()[0];
  const noisy = before > max;
  if (noisy && env.BENCH_NOISY !== '1') {
    console.error(
      `[bench] ${bench}: the 1-minute load average is ${before.toFixed(2)}, above ${max} ` +
        '(BENCH_LOAD_MAX): a report taken now would measure the other work, not this. ' +
        'Stop it and run again, or set BENCH_NOISY=1 to write a report marked as noise.',
    );
    process.exit(BUSY_EXIT_CODE);
  }
  console.log(`[bench] ${bench}: load average ${before.toFixed(2)} (threshold ${max})`);
  return { before, max, noisy };
}

/** The report's line about the machine's load, before and now. */
export function loadLine(gate: LoadGate): string {
  const after = os.loadavg()[0];
  // A quiet start is the measurement's condition; the load a bench then reaches is mostly its
  // own processes on the same cores (a 64-worker run on two cores shows 5-6).
  const start = gate.noisy ? 'busy' : 'quiet';
  return (
    `- load average (1 min): ${gate.before.toFixed(2)} when the bench began (${start}: ` +
    `threshold ${gate.max}, BENCH_LOAD_MAX), ${after.toFixed(2)} when it ended, ` +
    'the bench itself included'
  );
}

/** A report's text, marked at its top when it was forced on a busy machine. */
export function markNoisy(gate: LoadGate, text: string): string {
  if (!gate.noisy) return text;
  const banner =
    `> **Noisy: not a measurement.** This report was taken at a load average of ` +
    `${gate.before.toFixed(2)}, above the ${gate.max} threshold (BENCH_NOISY=1 forced it). ` +
    'Re-run it on a quiet machine before comparing anything against it.\n\n';
  return banner + text;
}

/** `text` with the load line after its machine line (or at its end), and marked when noisy. */
export function reportWithLoad(gate: LoadGate, text: string): string {
  const lines = text.split('\n');
  const at = lines.findIndex((l) => /^(- )?machine/i.test(l));
  lines.splice(at < 0 ? lines.length : at + 1, 0, loadLine(gate));
  return markNoisy(gate, lines.join('\n'));
}
