/**
 * The system invariants every harness run checks (docs/harness.md, "The checkers"): the soak's database checks
 * (invariants.checker.ts) and the simulation's own checks (sim/sim.checker.ts) both report under these ids.
 * Kept apart from invariants.checker.ts so the simulation reads them without its database code.
 */
export const INVARIANTS = [
  'INV-01',
  'INV-02',
  'INV-03',
  'INV-04',
  'INV-05',
  'INV-06',
  'INV-07',
  'INV-08',
] as const;
export type InvariantId = (typeof INVARIANTS)[number];
