import {
  isRevocationRequest,
  PendingRevocations,
  type RevocationRequestAnswer,
} from './revocation-requests.service';

const at = (ms: number) => new Date(ms).toISOString();
function request(id: string, expiresAtMs: number): RevocationRequestAnswer {
  return {
    requestId: id,
    key: `payout:${id}`,
    status: 'PENDING_APPROVAL',
    operator: 'operator-alice',
    reason: 'holder stuck',
    requestedBy: 'operator-alice',
    requestedAt: at(0),
    expiresAt: at(expiresAtMs),
  };
}

describe('PendingRevocations', () => {
  it('lists open requests newest first and drops them when their window closes', () => {
    let now = 1_000;
    const pending = new PendingRevocations(10, () => now);
    pending.add(request('a', 5_000));
    pending.add(request('b', 9_000));
    expect(pending.list().map((r) => r.requestId)).toEqual(['b', 'a']);
    now = 5_000;
    expect(pending.list().map((r) => r.requestId)).toEqual(['b']);
    pending.remove('b');
    expect(pending.list()).toEqual([]);
  });

  it('keeps at most its bound, the oldest going first', () => {
    const pending = new PendingRevocations(2, () => 0);
    for (const id of ['a', 'b', 'c']) pending.add(request(id, 10_000));
    expect(pending.list().map((r) => r.requestId)).toEqual(['c', 'b']);
    expect(pending.get('a')).toBeUndefined();
  });
});

describe('isRevocationRequest', () => {
  it("tells the lock-server's 202 from a revoke's answer", () => {
    expect(isRevocationRequest(request('a', 1))).toBe(true);
    expect(isRevocationRequest({ revokedToken: '7', newTokenFloor: '8', revocationId: 'r' })).toBe(
      false,
    );
    expect(isRevocationRequest(undefined)).toBe(false);
  });
});
