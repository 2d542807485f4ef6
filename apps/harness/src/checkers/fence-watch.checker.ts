import { withPg } from '../infra/postgres.infra';

/**
 * INV-04 at the guards: the account fences (paydb) and the rail high-water
 * marks (proxydb) are sampled over the run; no sample may be below an
 * earlier one for the same row.
 */
export class FenceWatch {
  private readonly last = new Map<string, bigint>();
  readonly violations: string[] = [];
  samples = 0;

  constructor(
    private readonly paydbUrl: string,
    private readonly proxydbUrl: string,
  ) {}

  async sample(): Promise<void> {
    const rows: Array<[string, bigint]> = [];
    await withPg(this.paydbUrl, async (c) => {
      const r = await c.query<{ account_id: string; fence: string }>(
        `SELECT account_id, fence::text AS fence FROM account`,
      );
      for (const x of r.rows) rows.push([`account.fence/${x.account_id}`, BigInt(x.fence)]);
    });
    await withPg(this.proxydbUrl, async (c) => {
      const r = await c.query<{ account_id: string; highest_token: string }>(
        `SELECT account_id, highest_token::text AS highest_token FROM rail_high_water`,
      );
      for (const x of r.rows)
        rows.push([`rail_high_water/${x.account_id}`, BigInt(x.highest_token)]);
    });
    for (const [k, v] of rows) {
      const prev = this.last.get(k);
      if (prev !== undefined && v < prev)
        this.violations.push(`${k} went from ${prev} down to ${v}`);
      this.last.set(k, v);
    }
    this.samples++;
  }

  /** Samples, swallowing a database outage (a restart in progress is not a violation). */
  async trySample(): Promise<void> {
    try {
      await this.sample();
    } catch {
      /* database unavailable right now */
    }
  }
}
