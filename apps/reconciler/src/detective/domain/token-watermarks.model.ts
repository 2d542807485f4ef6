export type Guard = 'account' | 'rail';

export interface Regression {
  guard: Guard;
  accountId: string;
  /** Highest value ever observed at this guard for this account. */
  highestSeen: bigint;
  /** What the guard holds now (null: the row is gone). */
  observed: bigint | null;
  /** First run that observed this value: emit the safety event once, not every run. */
  fresh: boolean;
}

interface Mark {
  highest: bigint;
  last: bigint | null;
}

/**
 * INV-04's detective side: the account fence (paydb) and the rail high-water
 * mark (proxydb) may only go up. Remembers, per guard and account, the highest
 * value observed by earlier runs and reports every value below it. Memory is
 * one entry per account and guard; accounts are never deleted.
 */
export class TokenWatermarks {
  private readonly marks: Record<Guard, Map<string, Mark>> = {
    account: new Map(),
    rail: new Map(),
  };

  /** Compares one full read of a guard's values with what earlier runs saw. */
  observe(guard: Guard, current: ReadonlyMap<string, bigint>): Regression[] {
    const marks = this.marks[guard];
    const out: Regression[] = [];
    for (const [accountId, mark] of marks) {
      const value = current.get(accountId) ?? null;
      if (value === null || value < mark.highest) {
        out.push({
          guard,
          accountId,
          highestSeen: mark.highest,
          observed: value,
          fresh: value !== mark.last,
        });
      } else {
        mark.highest = value;
      }
      mark.last = value;
    }
    for (const [accountId, value] of current) {
      if (!marks.has(accountId)) marks.set(accountId, { highest: value, last: value });
    }
    return out;
  }
}
