import type { RevocationEntry } from '../domain/revocation.types';

export type { RevocationEntry };

/**
 * Read side of the L8 audit records, key-agnostic: the reconciler turns the
 * revocations of keys it understands into guard raises (docs/reconciler.md,
 * "Revocation fencing"). Ordered by `newTokenFloor`, which is also the cursor.
 */
export abstract class RevocationLog {
  /** Revocations whose floor is above `afterFloor`, lowest floor first, at most `limit`. */
  abstract list(afterFloor: bigint, limit: number): Promise<RevocationEntry[]>;
}
