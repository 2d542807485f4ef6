/**
 * The one switch that lets a `down` migration destroy a token source or a
 * guard's memory (lockdb `fencing_token_seq`, proxydb `rail_high_water`, paydb
 * `account.fence`). Without it such a `down` refuses: a running lock-server
 * would grant token 1 again while the guards hold far higher ones, and every
 * holder would be fenced out (or, with a guard rewound too, a stale one let
 * through). Migrations run from the TypeORM CLI without any app's config, so
 * this is the only place in `migrations/` that reads the environment.
 * Procedure: docs/operations.md#revert-a-migration.
 */
export const ALLOW_DESTRUCTIVE_DOWN_ENV = 'DLOCK_ALLOW_DESTRUCTIVE_DOWN';

export function assertDestructiveDownAllowed(what: string): void {
  if (process.env[ALLOW_DESTRUCTIVE_DOWN_ENV] === '1') return;
  throw new Error(
    `refusing to revert: this down migration would ${what}. Follow "Revert a migration" in ` +
      `docs/operations.md; on a throwaway database set ${ALLOW_DESTRUCTIVE_DOWN_ENV}=1.`,
  );
}
