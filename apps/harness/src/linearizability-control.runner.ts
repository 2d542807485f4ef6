import { performance } from 'node:perf_hooks';
import {
  checkRecordedLockHistory,
  describeLinearizability,
  type LinearizabilityReport,
} from './checkers/linearizability';
import { lockWorkout } from './scenarios/lock-workout.scenario';
import type { DlockSystem } from './dlock-system.infra';
import {
  BROKEN_MODES,
  type BrokenMode,
} from '../../lock-server/src/locks/persistence/broken-lock.store';

export { BROKEN_MODES, type BrokenMode };

export interface LinearizabilityControlResult {
  /** 'off': the real lock-server, whose history must be accepted. */
  mode: BrokenMode | 'off';
  /** Accepted for 'off', rejected with an explanation for a broken mode. */
  passed: boolean;
  report: LinearizabilityReport;
  /** What the drill saw the server answer differently from the model (expected when broken). */
  deviations: string[];
  durationMs: number;
}

/**
 * The linearizability checker's controls (docs/harness.md, "Negative
 * controls"): the lock drill on the real lock-server (its history must be
 * accepted), then on a lock-server restarted with each LOCK_SERVER_BROKEN
 * mode (each history must be rejected, with the calls that cannot be
 * ordered). The checker looks only at the drill's own keys. The lock-server
 * is restarted unbroken at the end.
 */
export async function runLinearizabilityControls(
  sys: DlockSystem,
  o: { modes?: readonly BrokenMode[]; log?: (m: string) => void } = {},
): Promise<LinearizabilityControlResult[]> {
  const log = o.log ?? (() => undefined);
  const results: LinearizabilityControlResult[] = [];
  let broken = false;
  try {
    for (const mode of ['off', ...(o.modes ?? BROKEN_MODES)] as const) {
      const t0 = performance.now();
      if (mode !== 'off') {
        log(`linearizability control: lock-server with LOCK_SERVER_BROKEN=${mode}`);
        broken = true;
        await sys.lockServer.restart({ LOCK_SERVER_BROKEN: mode, DLOCK_HARNESS: '1' });
      }
      const tag = `${mode}-${Date.now().toString(36)}`;
      const drill = await lockWorkout(sys, tag);
      const keys = new Set(drill.keys);
      const report = await checkRecordedLockHistory(sys.recorder, {
        keyFilter: (k) => keys.has(k),
      });
      const passed =
        mode === 'off'
          ? report.verdict === 'ok' && drill.failures.length === 0
          : report.verdict === 'violation' && report.violations.every((v) => v.core.length > 0);
      results.push({
        mode,
        passed,
        report,
        deviations: drill.failures,
        durationMs: Math.round(performance.now() - t0),
      });
    }
  } finally {
    if (broken) {
      await sys.lockServer.restart({ LOCK_SERVER_BROKEN: undefined, DLOCK_HARNESS: undefined });
    }
  }
  return results;
}

/** How a control reads in the CLI's output. */
export function describeControl(r: LinearizabilityControlResult): string[] {
  const what =
    r.mode === 'off'
      ? 'the real lock-server: history accepted'
      : `LOCK_SERVER_BROKEN=${r.mode}: history rejected`;
  const lines = [`== linearizability control, ${what}: ${r.passed ? 'yes' : 'NO (FAIL)'}`];
  lines.push(...describeLinearizability(r.report).map((l) => `  ${l}`));
  for (const d of r.deviations) lines.push(`  the server answered differently: ${d}`);
  return lines;
}
