import { payoutLockKey, isTerminalPayoutState } from '@dlock/payout-contract';
import { checkRecordedLockHistory } from '../checkers/linearizability';
import { checkGrantHistory } from '../checkers/grant-history.checker';
import { INVARIANTS } from '../checkers/invariant-ids.types';
import type { GrantRecord, LockCall } from '../infra/lock-recorder.infra';
import { transition } from '@dlock/payout-contract';
import type { AdmittedWrite } from './payment-node.sim';
import type { World } from './worker.sim';

/** What the guards' databases hold at the end of a run (read by run.ts). */
export interface GuardRecords {
  admitted: AdmittedWrite[];
  balances: Map<string, number>;
  postings: Map<string, number>;
}

/** The checks of every run, by name (docs/harness.md, "Deterministic simulation"). */
export const SIM_CHECKS = [...INVARIANTS, 'LEASE', 'NO-RESUBMIT'] as const;
export type SimCheck = (typeof SIM_CHECKS)[number];

export type Violations = Partial<Record<SimCheck, string[]>>;

function add(out: Violations, check: SimCheck, message: string): void {
  (out[check] ??= []).push(message);
}

/** Grants as the harness's INV-06/INV-04 check reads them, from the server-side call record. */
function grantsOf(calls: readonly LockCall[]): GrantRecord[] {
  const grants = new Map<string, GrantRecord>();
  for (const c of calls) {
    const body = c.response as Record<string, string> | null;
    if (!c.url.endsWith('/acquire') || c.status !== 200 || !body) continue;
    // A duplicated or repeated acquire of the same session answers the same grant.
    if (grants.has(body.fencingToken)) continue;
    grants.set(body.fencingToken, {
      key: body.key,
      ownerId: body.ownerId,
      token: BigInt(body.fencingToken),
      proof: body.grantProof,
      requestAt: c.requestAt,
      grantedAt: c.responseAt!,
      releaseSentAt: null,
    });
  }
  for (const c of calls) {
    if (c.method !== 'DELETE' || !c.url.startsWith('/v1/locks/') || c.status !== 204) continue;
    const g = c.fencingToken === null ? undefined : grants.get(c.fencingToken);
    if (g && g.releaseSentAt === null) g.releaseSentAt = c.requestAt;
  }
  return [...grants.values()];
}

/** The lock-server's half: the WGL linearizability check and the grant history (INV-04, INV-06). */
async function checkLocks(w: World, out: Violations): Promise<Set<string>> {
  const report = await checkRecordedLockHistory(
    { calls: w.server.calls, callsDropped: 0 },
    { timeMaxMs: 5_000, partitionTimeMaxMs: 2_000, expirySlackMs: 0 },
  );
  for (const v of report.violations) add(out, 'INV-06', `${v.partition}: ${v.why ?? v.lines[0]}`);
  const grants = grantsOf(w.server.calls);
  const { inv06, inv04 } = checkGrantHistory(grants);
  inv06.forEach((m) => add(out, 'INV-06', m));
  inv04.forEach((m) => add(out, 'INV-04', m));
  return new Set(grants.map((g) => `${g.key}#${g.token}`));
}

/** The guards' half, from their own logs, recomputed here rather than trusted. */
function checkGuards(w: World, g: GuardRecords, granted: Set<string>, out: Violations): void {
  const last = new Map<string, { token: bigint; payoutId: string }>();
  const terminal = new Set<string>();
  for (const a of g.admitted) {
    const prev = last.get(a.accountId);
    if (prev && (a.token < prev.token || (a.token === prev.token && a.payoutId !== prev.payoutId)))
      add(
        out,
        'INV-01',
        `${a.accountId}: ${a.event} on ${a.payoutId} with token ${a.token} admitted after token ${prev.token} on ${prev.payoutId}`,
      );
    if (prev && a.token < prev.token)
      add(out, 'INV-05', `${a.accountId}: token ${a.token} written below the fence ${prev.token}`);
    last.set(a.accountId, { token: a.token, payoutId: a.payoutId });
    if (!granted.has(`${payoutLockKey(a.accountId)}#${a.token}`))
      add(
        out,
        'INV-07',
        `${a.payoutId}: ${a.event} with token ${a.token}, which no grant of ${a.accountId} carried`,
      );
    const t = transition(a.from, a.event);
    if (!t.allowed || t.to !== a.to || terminal.has(a.payoutId))
      add(
        out,
        'INV-08',
        `${a.payoutId}: ${a.from} -${a.event}-> ${a.to} is not a listed transition`,
      );
    if (isTerminalPayoutState(a.to)) terminal.add(a.payoutId);
  }
  const marks = new Map<string, bigint>();
  for (const p of w.rail.presentations) {
    const mark = marks.get(p.accountId) ?? 0n;
    if (p.token <= mark)
      add(
        out,
        'INV-05',
        `rail: ${p.payoutId} presented token ${p.token} at or below the mark ${mark}`,
      );
    marks.set(p.accountId, p.token > mark ? p.token : mark);
  }
  for (const [payoutId, n] of w.rail.paid)
    if (n > 1) add(out, 'INV-02', `${payoutId}: paid ${n} times at the rail`);
}

function checkLedger(
  w: World,
  g: GuardRecords,
  out: Violations,
  balances: ReadonlyMap<string, number>,
): void {
  for (const [payoutId, n] of g.postings)
    if (n > 1) add(out, 'INV-03', `${payoutId}: posted ${n} times`);
  for (const [accountId, start] of balances) {
    const posted = w.guards.payouts
      .filter((p) => p.accountId === accountId && w.guards.states.get(p.payoutId) === 'POSTED')
      .reduce((sum, p) => sum + p.amountMinor, 0);
    const balance = g.balances.get(accountId)!;
    if (balance !== start - posted)
      add(out, 'INV-03', `${accountId}: balance ${balance}, postings say ${start - posted}`);
  }
}

/** Every check on one finished run; an empty result is a clean run. */
export async function checkRun(
  w: World,
  g: GuardRecords,
  startBalances: ReadonlyMap<string, number>,
): Promise<Violations> {
  const out: Violations = {};
  const granted = await checkLocks(w, out);
  checkGuards(w, g, granted, out);
  checkLedger(w, g, out, startBalances);
  w.leaseViolations.forEach((m) => add(out, 'LEASE', m));
  w.resubmits.forEach((m) => add(out, 'NO-RESUBMIT', m));
  return out;
}
