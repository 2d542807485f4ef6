import { DlockError } from '@dlock/lock-api';
import { payoutLockKey, railClientRef, RailLookupClient } from '@dlock/payout-contract';
import { callOnce } from '../infra/http.infra';
import { withPg } from '../infra/postgres.infra';
import { waitUntil } from '@dlock/polling';
import { payoutStates } from '../payout.fixture';
import type { DlockSystem } from '../dlock-system.infra';

/** Waits until every payout satisfies `ok(state)`; returns the final states. */
export async function waitForStates(
  sys: DlockSystem,
  ids: string[],
  ok: (state: string) => boolean,
  timeoutMs: number,
  what: string,
): Promise<Map<string, string>> {
  let last = new Map<string, string>();
  try {
    return await waitUntil(
      what,
      async () => {
        last = await payoutStates(sys.paydbUrl, ids);
        return ids.every((id) => ok(last.get(id) ?? 'MISSING')) ? last : null;
      },
      timeoutMs,
      150,
    );
  } catch (err) {
    const states = [...last.values()].join(',');
    const workers = executorTails(sys);
    throw new Error(`${(err as Error).message} (states: ${states})\n${workers}`, { cause: err });
  }
}

/** Payouts that did not move are some worker's story: each executor's state and last words. */
function executorTails(sys: DlockSystem): string {
  const TAIL_CHARS = 1_500;
  return [...sys.executors]
    .map(([owner, p]) => {
      const state = p.running() ? 'running' : `exited ${JSON.stringify(p.exitInfo())}`;
      return `executor ${owner} (${state}):\n${p.output().slice(-TAIL_CHARS)}`;
    })
    .join('\n');
}

export function countStates(states: Map<string, string>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of states.values()) out[s] = (out[s] ?? 0) + 1;
  return out;
}

export interface SubmissionFact {
  presentedToken: bigint;
  outcome: string | null;
  ownerId: string;
}

/** proxydb's record for one payout (read straight from the table, FENCED rows included). */
export async function submissionsOf(sys: DlockSystem, payoutId: string): Promise<SubmissionFact[]> {
  return withPg(sys.proxydbUrl, async (c) => {
    const r = await c.query<{ presented_token: string; outcome: string | null; owner_id: string }>(
      `SELECT presented_token::text AS presented_token, outcome, owner_id FROM rail_submission
        WHERE payout_id = $1 ORDER BY created_at`,
      [payoutId],
    );
    return r.rows.map((x) => ({
      presentedToken: BigInt(x.presented_token),
      outcome: x.outcome,
      ownerId: x.owner_id,
    }));
  });
}

/** S2: how many transfers the rail booked for a payout (its client reference). */
export async function railTransfers(sys: DlockSystem, payoutId: string): Promise<number> {
  const rail = new RailLookupClient(sys.railStub.url);
  try {
    return (await rail.lookup(railClientRef(payoutId))).transfers.length;
  } finally {
    rail.close();
  }
}

/** rail-stub GET /admin/stats (the fields the scenarios use). */
export interface StubStats {
  submitsReceived: number;
  transfersAccepted: number;
  failures?: { error?: number; reset?: number; hold?: number };
}

export function stubStats(sys: DlockSystem): Promise<StubStats> {
  return callOnce<StubStats>('rail-stub', sys.railStub.url, {
    method: 'GET',
    path: '/admin/stats',
  });
}

export async function setStubFaults(
  sys: DlockSystem,
  patch: Record<string, unknown>,
): Promise<void> {
  await callOnce('rail-stub', sys.railStub.url, {
    method: 'POST',
    path: '/admin/faults',
    body: patch,
  });
}

/** Tokens under which a payout's transitions were written (paydb audit). */
export async function transitionsOf(
  sys: DlockSystem,
  payoutId: string,
): Promise<Array<{ from: string; to: string; token: bigint | null; actor: string }>> {
  return withPg(sys.paydbUrl, async (c) => {
    const r = await c.query<{
      from_state: string;
      to_state: string;
      token: string | null;
      actor: string;
    }>(
      `SELECT from_state, to_state, token::text AS token, actor FROM payout_transition
        WHERE payout_id = $1 ORDER BY transition_id`,
      [payoutId],
    );
    return r.rows.map((x) => ({
      from: x.from_state,
      to: x.to_state,
      token: x.token === null ? null : BigInt(x.token),
      actor: x.actor,
    }));
  });
}

/** L7 (advisory, for the harness only): is the key held right now? */
export async function lockHeld(sys: DlockSystem, accountId: string): Promise<boolean> {
  try {
    const info = await callOnce<{ held: boolean }>('lock-server', sys.lockServer.url, {
      method: 'GET',
      path: `/v1/locks/${payoutLockKey(accountId)}`,
    });
    return info.held;
  } catch (err) {
    // L7 answers 404 for a key never seen: not held.
    if (err instanceof DlockError && err.httpStatus === 404) return false;
    throw err;
  }
}

export function maxToken(tokens: Iterable<bigint>): bigint {
  let m = 0n;
  for (const t of tokens) if (t > m) m = t;
  return m;
}
