/** payment-resource's view of an account (GET /v1/accounts). */
export interface AccountWire {
  accountId: string;
  currency: string;
  balanceMinor: number | string;
  fence: string;
}

/** rail-proxy's high-water mark of an account (GET /v1/rail/high-water). */
export interface HighWaterWire {
  accountId: string;
  highWater: string;
}

/** One line of the fences panel. */
export interface FenceRow {
  accountId: string;
  currency: string | null;
  balanceMinor: number | string | null;
  /** Newest token payment-resource accepted for the account; null when it has no row. */
  fence: string | null;
  /** Newest token rail-proxy accepted for the account; null when it has no row. */
  highWater: string | null;
  /** Both guards hold the same mark (docs/console.md says why a gap is worth a look). */
  agree: boolean;
}

/**
 * The two guards' marks side by side, one row per account either knows,
 * ordered by account id. Tokens are compared as integers, never as text.
 */
export function joinFences(accounts: AccountWire[], highWaters: HighWaterWire[]): FenceRow[] {
  const rows = new Map<string, FenceRow>();
  for (const a of accounts) {
    rows.set(a.accountId, {
      accountId: a.accountId,
      currency: a.currency,
      balanceMinor: a.balanceMinor,
      fence: a.fence,
      highWater: null,
      agree: false,
    });
  }
  for (const h of highWaters) {
    const row = rows.get(h.accountId) ?? {
      accountId: h.accountId,
      currency: null,
      balanceMinor: null,
      fence: null,
      highWater: null,
      agree: false,
    };
    row.highWater = h.highWater;
    rows.set(h.accountId, row);
  }
  // A guard without a row for the account has accepted no token: its mark is 0.
  for (const row of rows.values())
    row.agree = BigInt(row.fence ?? 0) === BigInt(row.highWater ?? 0);
  return [...rows.values()].sort((a, b) =>
    a.accountId < b.accountId ? -1 : a.accountId > b.accountId ? 1 : 0,
  );
}
