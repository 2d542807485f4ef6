import { runSeed, type BrokenVariant } from '../../sim/sim.runner';

/**
 * The checker on whole histories of the real lock-server service layer, as the deterministic
 * simulation records them at the server's door (docs/harness.md, "Deterministic simulation"):
 * every history of the real store is accepted (sim.runner.spec.ts's seed budget, where the checker is
 * INV-06), and each store that breaks one rule (BrokenLockStore) is rejected by the checker
 * itself, with its explanation of the calls that cannot be ordered.
 */
describe('linearizability checker on the simulation’s lock-server histories', () => {
  it.each<[BrokenVariant, RegExp]>([
    ['store-grants-twice', /^lock \S+: granted token \d+ while the key was held by/],
    ['store-releases-any-token', /^lock \S+: released token \d+, but the key was (held by|free)/],
    ['store-tokens-go-back', /^lock \S+: token \d+ is not above \d+/],
  ])('rejects a store that breaks a rule: %s', async (broken, why) => {
    let explained: string | undefined;
    for (let seed = 1; seed <= 5 && explained === undefined; seed++) {
      const r = await runSeed({ seed, broken });
      explained = r.violations['INV-06']?.find((m) => why.test(m));
    }
    expect(explained).toMatch(why);
  });
});
