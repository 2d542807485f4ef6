import { checkGrantHistory } from '../checkers/grant-history.checker';
import { checkRecordedLockHistory } from '../checkers/linearizability';
import { mergeLockHistories, type RecordedLockHistory } from './lock-history.infra';
import type { GrantRecord, LockCall } from './lock-recorder.infra';

/**
 * The negative control of the merge: two replicas that each look correct on
 * their own, but granted one key to two holders at once. Only the merged
 * timeline shows it, and every checker must then say so.
 */
const K = 'payout:acc-1';
const SA = '11111111-1111-1111-1111-111111111111';
const SB = '22222222-2222-2222-2222-222222222222';

function call(c: Partial<LockCall> & Pick<LockCall, 'method' | 'url' | 'requestAt'>): LockCall {
  return {
    seq: 0,
    ownerId: 'a',
    fencingToken: null,
    request: null,
    responseAt: c.requestAt + 5,
    outcome: 'answered',
    status: 200,
    response: null,
    ...c,
  };
}

/** One replica's history: `owner` opens a session at `at`, is granted K with `token`, releases it at `releasedAt`. */
function replica(
  owner: string,
  session: string,
  token: bigint,
  at: number,
  releasedAt: number | null,
): RecordedLockHistory {
  const grant = {
    key: K,
    ownerId: owner,
    sessionId: session,
    fencingToken: String(token),
    acquiredAt: '2026-01-01T00:00:00.000Z',
    expiresAt: '2026-01-01T00:00:06.000Z',
  };
  const calls = [
    call({
      method: 'POST',
      url: '/v1/sessions',
      ownerId: owner,
      requestAt: at,
      status: 201,
      response: { sessionId: session, ttlMillis: 3000 },
    }),
    call({
      method: 'POST',
      url: `/v1/locks/${K}/acquire`,
      ownerId: owner,
      requestAt: at + 10,
      request: { sessionId: session },
      response: grant,
    }),
  ];
  if (releasedAt !== null) {
    calls.push(
      call({
        method: 'DELETE',
        url: `/v1/locks/${K}`,
        ownerId: owner,
        requestAt: releasedAt,
        fencingToken: String(token),
        status: 204,
      }),
    );
  }
  const record: GrantRecord = {
    key: K,
    ownerId: owner,
    token,
    proof: '',
    requestAt: at + 10,
    grantedAt: at + 15,
    releaseSentAt: releasedAt,
  };
  return { grants: [record], revocations: [], calls, callsDropped: 0 };
}

describe('merged lock history of several replicas', () => {
  it('keeps every call once, in arrival order, renumbered', () => {
    const merged = mergeLockHistories([
      replica('a', SA, 5n, 0, 100),
      replica('b', SB, 6n, 200, null),
    ]);
    expect(merged.calls.map((c) => c.seq)).toEqual([0, 1, 2, 3, 4]);
    expect(merged.calls.map((c) => c.requestAt)).toEqual([0, 10, 100, 200, 210]);
    expect(merged.grants.map((g) => g.token)).toEqual([5n, 6n]);
  });

  it('a handover across replicas (release, then the next grant) is clean', async () => {
    const merged = mergeLockHistories([
      replica('a', SA, 5n, 0, 100),
      replica('b', SB, 6n, 200, null),
    ]);
    expect(checkGrantHistory(merged.grants).inv06).toEqual([]);
    expect((await checkRecordedLockHistory(merged)).verdict).toBe('ok');
  });

  it('an overlap between two replicas’ grants is flagged, though each replica alone is clean', async () => {
    // Replica 0 grants K to a (held until its release at 100); replica 1 grants it to b at 65.
    const r0 = replica('a', SA, 5n, 0, 100);
    const r1 = replica('b', SB, 6n, 50, null);
    for (const alone of [r0, r1]) {
      expect(checkGrantHistory(alone.grants).inv06).toEqual([]);
      expect((await checkRecordedLockHistory(alone)).verdict).toBe('ok');
    }
    const merged = mergeLockHistories([r0, r1]);
    expect(checkGrantHistory(merged.grants).inv06).toEqual([
      expect.stringMatching(/grant 6 to b overlaps grant 5 to a/),
    ]);
    expect((await checkRecordedLockHistory(merged)).verdict).toBe('violation');
  });
});
