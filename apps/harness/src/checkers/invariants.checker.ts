import type { Client } from 'pg';
import type { GrantRecord, RevocationRecord } from '../infra/lock-recorder.infra';
import {
  payoutLockKey,
  RailLookupClient,
  type RailTransfer,
  isTerminalPayoutState,
} from '@dlock/payout-contract';
import { withPg } from '../infra/postgres.infra';
import { setTimeout as sleep } from 'node:timers/promises';
import { checkGrantHistory, checkRevocations } from './grant-history.checker';
import { INVARIANTS, type InvariantId } from './invariant-ids.types';

export { INVARIANTS, type InvariantId } from './invariant-ids.types';

export interface CheckInput {
  paydbUrl: string;
  proxydbUrl: string;
  railStubUrl: string;
  grants: readonly GrantRecord[];
  revocations: readonly RevocationRecord[];
  /** Violations the FenceWatch collected while the run went on. */
  fenceWatchViolations: readonly string[];
}

export interface InvariantReport {
  violations: Record<InvariantId, string[]>;
  total: number;
  facts: {
    payoutsByState: Record<string, number>;
    railTransfers: number;
    submissionsByOutcome: Record<string, number>;
    grants: number;
    transitions: number;
  };
}

const LOOKUP_CONCURRENCY = 8;
/** S2 is a read: one the loaded machine left unanswered within its 1 s is asked again. */
const LOOKUP_ATTEMPTS = 3;

interface PayoutRow {
  payout_id: string;
  account_id: string;
  amount_minor: string;
  state: string;
  client_ref: string;
  token_stamp: string | null;
}
interface TransitionRow {
  payout_id: string;
  account_id: string;
  from_state: string;
  to_state: string;
  token: string | null;
  event: string;
}
interface SubmissionRow {
  submission_id: string;
  payout_id: string;
  account_id: string;
  presented_token: string;
  outcome: string | null;
  fencing_enforced: boolean;
  highest_token_seen: string | null;
  client_ref: string;
}

type Paydb = Awaited<ReturnType<typeof readPaydb>>;
type Proxydb = Awaited<ReturnType<typeof readProxydb>>;

/** Everything the checkers judge: read once, after the run. */
interface Evidence {
  input: CheckInput;
  pay: Paydb;
  proxy: Proxydb;
  /** The rail's own record (S2) per client reference. */
  transfers: Map<string, RailTransfer[]>;
  history: ReturnType<typeof checkGrantHistory>;
  transitionsByPayout: Map<string, TransitionRow[]>;
  /** Whether the lock server granted `token` for this account's payout lock. */
  granted: (accountId: string, token: bigint) => boolean;
}

/** One checker per invariant: the violations it finds, in the order it finds them. */
const CHECKERS: Record<InvariantId, (e: Evidence) => string[]> = {
  'INV-01': tokenOrder,
  'INV-02': singleSubmission,
  'INV-03': ledgerMatchesRail,
  // Guards' fences and marks never decrease; tokens never repeat or go back.
  'INV-04': (e) => [
    ...e.input.fenceWatchViolations,
    ...e.history.inv04,
    ...checkRevocations(e.input.grants, e.input.revocations),
  ],
  'INV-05': nothingBelowFence,
  // Mutual exclusion of grants on the server's order.
  'INV-06': (e) => [...e.history.inv06],
  'INV-07': tokensGranted,
  'INV-08': auditChain,
};

/**
 * INV-01..08 (docs/references.md), evaluated after the fact from paydb, proxydb, the
 * rail's own record (S2 lookup) and the recorded lock history. The same code
 * judges every scenario, the negative control and the soak.
 */
export async function checkInvariants(input: CheckInput): Promise<InvariantReport> {
  const e = await gatherEvidence(input);
  const v = Object.fromEntries(INVARIANTS.map((id) => [id, CHECKERS[id](e)])) as Record<
    InvariantId,
    string[]
  >;
  return {
    violations: v,
    total: INVARIANTS.reduce((n, id) => n + v[id].length, 0),
    facts: facts(e),
  };
}

async function gatherEvidence(input: CheckInput): Promise<Evidence> {
  const pay = await withPg(input.paydbUrl, (c) => readPaydb(c));
  const proxy = await withPg(input.proxydbUrl, (c) => readProxydb(c));
  const transfers = await lookupTransfers(
    input.railStubUrl,
    pay.payouts.filter((p) => p.state !== 'PENDING').map((p) => p.client_ref),
  );
  const grantsByKey = new Map<string, Set<bigint>>();
  for (const g of input.grants) {
    const set = grantsByKey.get(g.key) ?? new Set<bigint>();
    set.add(g.token);
    grantsByKey.set(g.key, set);
  }
  return {
    input,
    pay,
    proxy,
    transfers,
    history: checkGrantHistory(input.grants),
    transitionsByPayout: group(pay.transitions, (t) => t.payout_id),
    granted: (accountId, token) => grantsByKey.get(payoutLockKey(accountId))?.has(token) ?? false,
  };
}

/** INV-01: mutations of one payout, and of one account, happen in token order. */
function tokenOrder({ pay, transitionsByPayout }: Evidence): string[] {
  const out: string[] = [];
  const transitionsByAccount = group(pay.transitions, (t) => t.account_id);
  for (const [key, list] of [...transitionsByPayout, ...transitionsByAccount]) {
    let max = 0n;
    for (const t of list) {
      if (t.token === null) continue;
      const tok = BigInt(t.token);
      if (tok < max) {
        out.push(
          `${key}: ${t.from_state}→${t.to_state} under token ${tok} after a mutation under ${max}`,
        );
      }
      if (tok > max) max = tok;
    }
  }
  return out;
}

/** The transfers the rail booked under a client reference, duplicates of another left out. */
function ownTransfers(transfers: Map<string, RailTransfer[]>, clientRef: string): RailTransfer[] {
  return (transfers.get(clientRef) ?? []).filter((t) => !t.duplicateOf);
}

/** INV-02: at most one live submission per payout, at most one transfer per client reference. */
function singleSubmission({ proxy, transfers }: Evidence): string[] {
  const out: string[] = [];
  for (const [payoutId, list] of group(proxy.submissions, (s) => s.payout_id)) {
    const live = list.filter(
      (s) => s.outcome === null || s.outcome === 'ACKED' || s.outcome === 'TIMEOUT',
    );
    if (live.length > 1) {
      out.push(
        `payout ${payoutId}: ${live.length} live submissions (${live.map((s) => s.outcome ?? 'unresolved').join(', ')})`,
      );
    }
  }
  for (const clientRef of transfers.keys()) {
    const own = ownTransfers(transfers, clientRef).length;
    if (own > 1) out.push(`client reference ${clientRef}: ${own} transfers at the rail`);
  }
  return out;
}

/** INV-03: balanced groups, balance = ledger sum, and the ledger matches the rail. */
function ledgerMatchesRail({ pay, transfers }: Evidence): string[] {
  const out: string[] = [];
  for (const g of pay.unbalancedGroups) out.push(`ledger group ${g.group} sums to ${g.total}`);
  for (const a of pay.balanceMismatches) {
    out.push(`account ${a.account_id}: balance ${a.balance} ≠ ledger sum ${a.ledger}`);
  }
  const payoutLegs = new Map(pay.payoutLegs.map((l) => [l.payout_id, l]));
  for (const p of pay.payouts) {
    const legs = payoutLegs.get(p.payout_id);
    const n = legs ? Number(legs.n) : 0;
    const moved = ownTransfers(transfers, p.client_ref).length;
    if (p.state === 'POSTED') {
      if (n !== 2 || legs?.debit !== `-${p.amount_minor}`) {
        out.push(`payout ${p.payout_id} POSTED with ${n} ledger rows (debit ${legs?.debit ?? 0})`);
      }
      if (moved !== 1)
        out.push(`payout ${p.payout_id} POSTED but the rail shows ${moved} transfers`);
    } else if (n !== 0) {
      out.push(`payout ${p.payout_id} in ${p.state} has ${n} ledger rows`);
    }
    if (p.state === 'FAILED' && moved > 0) {
      out.push(`payout ${p.payout_id} FAILED but the rail paid it ${moved}×`);
    }
  }
  return out;
}

/** INV-05: nothing accepted below a stored fence, at either guard. */
function nothingBelowFence({ pay, proxy }: Evidence): string[] {
  const out = pay.ledgerAboveFence.map(
    (l) =>
      `ledger row of ${l.account_id} carries fence ${l.fence} above the account fence ${l.account_fence}`,
  );
  for (const [accountId, list] of group(proxy.submissions, (s) => s.account_id)) {
    let max = 0n;
    for (const s of list) {
      const tok = BigInt(s.presented_token);
      if (s.outcome === 'FENCED') {
        if (s.highest_token_seen !== null && tok > BigInt(s.highest_token_seen)) {
          out.push(
            `account ${accountId}: token ${tok} fenced although above the mark ${s.highest_token_seen}`,
          );
        }
        continue;
      }
      if (tok <= max) {
        out.push(
          `account ${accountId}: rail submission ${s.submission_id} accepted with token ${tok} ` +
            `at or below the mark ${max}${s.fencing_enforced ? '' : ' (proxy fencing disabled)'}`,
        );
      }
      if (tok > max) max = tok;
    }
    const mark = proxy.marks.get(accountId);
    if (mark !== undefined && max > mark) {
      out.push(`account ${accountId}: accepted token ${max} above the stored mark ${mark}`);
    }
  }
  return out;
}

/** INV-07: every token presented at a guard was granted for that account's key. */
function tokensGranted({ pay, proxy, granted }: Evidence): string[] {
  const out: string[] = [];
  for (const s of proxy.submissions) {
    if (!granted(s.account_id, BigInt(s.presented_token))) {
      out.push(
        `rail submission ${s.submission_id} presented token ${s.presented_token}, never granted for ${s.account_id}`,
      );
    }
  }
  for (const t of pay.transitions) {
    if (t.token !== null && !granted(t.account_id, BigInt(t.token))) {
      out.push(
        `payout ${t.payout_id} ${t.from_state}→${t.to_state} under token ${t.token}, never granted`,
      );
    }
  }
  return out;
}

/** INV-08: the audit chain is consistent and never leaves a terminal state. */
function auditChain({ pay, transitionsByPayout }: Evidence): string[] {
  const out: string[] = [];
  const stateOf = new Map(pay.payouts.map((p) => [p.payout_id, p.state]));
  for (const [payoutId, list] of transitionsByPayout) {
    let state = 'PENDING';
    for (const t of list) {
      if (isTerminalPayoutState(state))
        out.push(`payout ${payoutId} left terminal ${state} for ${t.to_state}`);
      if (t.from_state !== state) {
        out.push(`payout ${payoutId}: transition from ${t.from_state} while in ${state}`);
      }
      state = t.to_state;
    }
    if (stateOf.get(payoutId) !== state) {
      out.push(`payout ${payoutId} is ${stateOf.get(payoutId)} but its audit ends in ${state}`);
    }
  }
  return out;
}

function facts({ input, pay, proxy, transfers }: Evidence): InvariantReport['facts'] {
  const payoutsByState: Record<string, number> = {};
  for (const p of pay.payouts) payoutsByState[p.state] = (payoutsByState[p.state] ?? 0) + 1;
  const submissionsByOutcome: Record<string, number> = {};
  for (const s of proxy.submissions) {
    const k = s.outcome ?? 'UNRESOLVED';
    submissionsByOutcome[k] = (submissionsByOutcome[k] ?? 0) + 1;
  }
  let railTransfers = 0;
  for (const clientRef of transfers.keys())
    railTransfers += ownTransfers(transfers, clientRef).length;
  return {
    payoutsByState,
    railTransfers,
    submissionsByOutcome,
    grants: input.grants.length,
    transitions: pay.transitions.length,
  };
}

async function readPaydb(c: Client) {
  const payouts = (
    await c.query<PayoutRow>(
      `SELECT payout_id, account_id, amount_minor::text, state, client_ref, token_stamp::text FROM payout`,
    )
  ).rows;
  const transitions = (
    await c.query<TransitionRow>(
      `SELECT t.payout_id, p.account_id, t.from_state, t.to_state, t.token::text AS token, t.event
         FROM payout_transition t JOIN payout p USING (payout_id) ORDER BY t.transition_id`,
    )
  ).rows;
  const unbalancedGroups = (
    await c.query<{ group: string; total: string }>(
      `SELECT txn_group_id AS group, sum(amount_minor)::text AS total FROM ledger_entry
        GROUP BY txn_group_id HAVING sum(amount_minor) <> 0`,
    )
  ).rows;
  const balanceMismatches = (
    await c.query<{ account_id: string; balance: string; ledger: string }>(
      `SELECT a.account_id, a.balance_minor::text AS balance, coalesce(sum(l.amount_minor), 0)::text AS ledger
         FROM account a LEFT JOIN ledger_entry l USING (account_id)
        GROUP BY a.account_id, a.balance_minor HAVING a.balance_minor <> coalesce(sum(l.amount_minor), 0)`,
    )
  ).rows;
  const payoutLegs = (
    await c.query<{ payout_id: string; n: string; debit: string }>(
      `SELECT l.payout_id, count(*)::text AS n,
              coalesce(sum(l.amount_minor) FILTER (WHERE l.account_id = p.account_id), 0)::text AS debit
         FROM ledger_entry l JOIN payout p USING (payout_id)
        WHERE l.payout_id IS NOT NULL GROUP BY l.payout_id`,
    )
  ).rows;
  const ledgerAboveFence = (
    await c.query<{ account_id: string; fence: string; account_fence: string }>(
      `SELECT l.account_id, l.fence::text AS fence, a.fence::text AS account_fence
         FROM ledger_entry l JOIN account a USING (account_id)
        WHERE l.fence IS NOT NULL AND a.kind = 'CUSTOMER' AND l.fence > a.fence`,
    )
  ).rows;
  return {
    payouts,
    transitions,
    unbalancedGroups,
    balanceMismatches,
    payoutLegs,
    ledgerAboveFence,
  };
}

async function readProxydb(c: Client) {
  const submissions = (
    await c.query<SubmissionRow>(
      `SELECT submission_id, payout_id, account_id, presented_token::text AS presented_token, outcome,
              fencing_enforced, highest_token_seen::text AS highest_token_seen, client_ref
         FROM rail_submission ORDER BY created_at, submission_id`,
    )
  ).rows;
  const marks = new Map(
    (
      await c.query<{ account_id: string; highest_token: string }>(
        `SELECT account_id, highest_token::text AS highest_token FROM rail_high_water`,
      )
    ).rows.map((r) => [r.account_id, BigInt(r.highest_token)]),
  );
  return { submissions, marks };
}

/** S2: the rail's own record per client reference. */
async function lookupTransfers(
  stubUrl: string,
  clientRefs: string[],
): Promise<Map<string, RailTransfer[]>> {
  const out = new Map<string, RailTransfer[]>();
  const queue = [...new Set(clientRefs)];
  const rail = new RailLookupClient(stubUrl);
  const worker = async () => {
    for (let ref = queue.pop(); ref !== undefined; ref = queue.pop()) {
      out.set(ref, await lookupWithRetry(rail, ref));
    }
  };
  try {
    await Promise.all(Array.from({ length: LOOKUP_CONCURRENCY }, worker));
  } finally {
    rail.close();
  }
  return out;
}

async function lookupWithRetry(rail: RailLookupClient, ref: string): Promise<RailTransfer[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await rail.lookup(ref)).transfers;
    } catch (err) {
      if (attempt >= LOOKUP_ATTEMPTS || (err as { retrySafe?: boolean }).retrySafe !== true) {
        throw err;
      }
      await sleep(500 * attempt);
    }
  }
}

function group<T>(rows: readonly T[], key: (row: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const r of rows) {
    const list = m.get(key(r));
    if (list) list.push(r);
    else m.set(key(r), [r]);
  }
  return m;
}

/** One line per violated invariant, for logs and reports. */
export function summarize(report: InvariantReport): string[] {
  return INVARIANTS.flatMap((id) =>
    report.violations[id].slice(0, 5).map((msg) => `${id}: ${msg}`),
  );
}
