import { linearizabilityLine } from '../src/checkers/linearizability';
import type {
  BrokenMode,
  LinearizabilityControlResult,
} from '../src/linearizability-control.runner';
import { log } from './support';

/** What the checker must say about each broken lock-server (docs/harness.md, "Negative controls"). */
const EXPECTED_WHY: Record<BrokenMode, RegExp> = {
  'release-ignores-token': /released token \d+, but the key was (held by|free)/,
  'acquire-ignores-holder': /granted token \d+ while the key was held by/,
  'token-goes-back': /token \d+ is not above \d+/,
};

/**
 * The drill on the real lock-server is accepted; on a lock-server restarted
 * with a LOCK_SERVER_BROKEN mode it is rejected, with the few calls that
 * cannot be ordered. Used by scenarios.spec.ts (pg) and
 * control-and-etcd.spec.ts (etcd).
 */
export function expectControls(
  results: LinearizabilityControlResult[],
  modes: readonly BrokenMode[],
): void {
  const [real, ...broken] = results;
  expect(real.mode).toBe('off');
  expect(real.deviations).toEqual([]);
  expect(linearizabilityLine(real.report)).toMatch(/^linearizability: ok/);
  // Not vacuous: the drill's three keys and its sessions were judged.
  expect(real.report.keys).toBe(3);
  expect(broken.map((r) => r.mode)).toEqual(modes);
  for (const r of broken) {
    if (r.mode === 'off') throw new Error('one run on the real lock-server only');
    const why = EXPECTED_WHY[r.mode];
    log(linearizabilityLine(r.report));
    expect({ mode: r.mode, verdict: r.report.verdict }).toEqual({
      mode: r.mode,
      verdict: 'violation',
    });
    const v = r.report.violations.find((x) => why.test(x.why ?? ''));
    expect(v).toBeDefined();
    // The explanation is the few calls that conflict, each printed.
    expect(v!.core.length).toBeGreaterThanOrEqual(2);
    expect(v!.core.length).toBeLessThanOrEqual(4);
    expect(v!.lines.slice(0, v!.core.length).every((l) => /^#\d+ \+/.test(l))).toBe(true);
  }
}
