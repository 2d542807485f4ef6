import path from 'node:path';
import { REPO_ROOT, runNode, type NodeRun } from '@dlock/testing';

/**
 * The simulation with the guards' real services and SQL on PGlite
 * (docs/harness.md, "Deterministic simulation"), through the built CLI in
 * child processes: PGlite's dynamic `import("fs")` does not load inside
 * jest's module VM. Each child is killed if it outlives its deadline
 * (runNode), and a PGlite left open would keep it alive: its exit is part of
 * what is tested.
 */
const CLI = path.join(REPO_ROOT, 'dist', 'apps', 'harness', 'src', 'sim', 'sim.cli.js');
/** A cold process opens both databases (seconds); a machine's first run also migrates them. */
const RUN_DEADLINE_MS = 90_000;

/**
 * The first seed from 1 at which `guard-skips-fence` writes a stale token on
 * PGlite (docs/harness.md, "Negative controls"): before it, no run presents
 * one, so the switch has nothing to let through.
 */
const SKIP_FENCE_CAUGHT_AT_SEED = 25;

const sim = (...args: string[]): Promise<NodeRun> =>
  runNode(CLI, [...args, '--guards', 'pglite'], {}, RUN_DEADLINE_MS);

/** The history hash a replay prints for `seed`, with whether it passed. */
function replayed(run: NodeRun, seed: number): { verdict: string; hash: string } {
  const m = new RegExp(`^seed ${seed}: (ok|FAILED) +history ([0-9a-f]{64})$`, 'm').exec(run.out);
  if (!m) throw new Error(`no replay line for seed ${seed} in:\n${run.out.slice(-2_000)}`);
  return { verdict: m[1], hash: m[2] };
}

describe('deterministic simulation on PGlite (docs/harness.md, "Deterministic simulation")', () => {
  it('passes a few seeds with the real guards, and exits when done', async () => {
    const run = await sim('--seeds', '3');
    expect(run.out).toMatch(/^3 seeds \(0 failing\) in /m);
    expect(run.code).toBe(0);
  });

  it('replays a seed to the same history hash in two processes; the guard that skips its fence is caught on it', async () => {
    const seed = String(SKIP_FENCE_CAUGHT_AT_SEED);
    const [once, again, broken] = await Promise.all([
      sim('--seed', seed),
      sim('--seed', seed),
      sim('--seed', seed, '--broken', 'guard-skips-fence'),
    ]);
    const [a, b] = [
      replayed(once, SKIP_FENCE_CAUGHT_AT_SEED),
      replayed(again, SKIP_FENCE_CAUGHT_AT_SEED),
    ];
    expect(a).toEqual({ verdict: 'ok', hash: b.hash });
    expect([once.code, again.code]).toEqual([0, 0]);
    // The same schedule with payment-resource's kill switch: a stale token's write lands.
    expect(replayed(broken, SKIP_FENCE_CAUGHT_AT_SEED).verdict).toBe('FAILED');
    expect(broken.out).toMatch(
      /^ {2}INV-01: acct-\d: \S+ on \S+ with token \d+ admitted after token \d+/m,
    );
    expect(broken.code).toBe(1);
  });
});
