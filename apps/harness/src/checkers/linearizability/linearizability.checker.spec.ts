import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  checkLockHistory,
  checkRecordedLockHistory,
  describeLinearizability,
} from './linearizability.checker';
import { readLockHistory, writeLockHistory } from './lock-history.file';
import { granted, HistoryBuilder } from '../../../test/support/history-builder';
import type { LockCall } from '../../infra/lock-recorder.infra';

const K = 'payout:acc-1';
const CONTENDED = { type: 'contended' } as const;
const LOCK_LOST = { type: 'lock-lost' } as const;

/** Two workers with live sessions (heartbeats every second) over the first `untilMs`. */
function twoWorkers(untilMs: number): HistoryBuilder {
  return new HistoryBuilder()
    .open('a', 'sa', [0, 5])
    .open('b', 'sb', [0, 5])
    .heartbeats('sa', 1_000, untilMs)
    .heartbeats('sb', 1_000, untilMs);
}

async function verdictOf(h: HistoryBuilder) {
  const r = await checkLockHistory(h.ops);
  return { verdict: r.verdict, text: describeLinearizability(r).join('\n'), report: r };
}

describe('linearizability checker: histories of a correct lock-server are accepted', () => {
  it('a handover: grant, contention, release, a larger token for the next holder', async () => {
    const h = twoWorkers(3_000)
      .acquire(K, 'a', 'sa', [10, 20], granted(5n, 'a', 'sa'))
      .acquire(K, 'b', 'sb', [30, 40], CONTENDED)
      .inspect(K, [45, 50], { type: 'held', owner: 'a', token: 5n })
      .renew(K, 'a', 'sa', 5n, [60, 70], granted(5n, 'a', 'sa'))
      .release(K, 'a', 5n, [80, 90])
      .inspect(K, [95, 99], { type: 'free' })
      .acquire(K, 'b', 'sb', [100, 110], granted(9n, 'b', 'sb'));
    expect((await verdictOf(h)).verdict).toBe('ok');
  });

  it('overlapping calls may be ordered either way: a contended answer racing the winning acquire', async () => {
    const h = twoWorkers(1_000)
      .acquire(K, 'a', 'sa', [10, 50], granted(5n, 'a', 'sa'))
      .acquire(K, 'b', 'sb', [5, 40], CONTENDED);
    expect((await verdictOf(h)).verdict).toBe('ok');
  });

  it('the same owner and session acquiring a key it holds gets the same grant back', async () => {
    const h = twoWorkers(1_000)
      .acquire(K, 'a', 'sa', [10, 20], granted(5n, 'a', 'sa'))
      .acquire(K, 'a', 'sa', [30, 40], granted(5n, 'a', 'sa'));
    expect((await verdictOf(h)).verdict).toBe('ok');
  });

  it('an acquire whose answer was lost may have granted: the retry gets that grant, the token unseen before', async () => {
    const h = twoWorkers(2_000)
      .acquire(K, 'a', 'sa', [10, null], granted(0n, 'a', 'sa'))
      .acquire(K, 'a', 'sa', [500, 510], granted(12n, 'a', 'sa'))
      .acquire(K, 'b', 'sb', [600, 610], CONTENDED);
    expect((await verdictOf(h)).verdict).toBe('ok');
  });

  it('an acquire whose answer was lost may also have done nothing', async () => {
    const h = twoWorkers(2_000)
      .acquire(K, 'a', 'sa', [10, null], granted(0n, 'a', 'sa'))
      .acquire(K, 'b', 'sb', [500, 510], granted(7n, 'b', 'sb'));
    expect((await verdictOf(h)).verdict).toBe('ok');
  });

  it('a release whose answer was lost may have freed the key for the next holder', async () => {
    const h = twoWorkers(2_000)
      .acquire(K, 'a', 'sa', [10, 20], granted(5n, 'a', 'sa'))
      .release(K, 'a', 5n, [30, null])
      .acquire(K, 'b', 'sb', [100, 110], granted(6n, 'b', 'sb'));
    expect((await verdictOf(h)).verdict).toBe('ok');
  });

  it('after a revocation the next grant is above its floor', async () => {
    const h = twoWorkers(2_000)
      .acquire(K, 'a', 'sa', [10, 20], granted(5n, 'a', 'sa'))
      .revoke(K, 5n, [30, 40], { type: 'revoked', revokedToken: 5n, floor: 6n })
      .renew(K, 'a', 'sa', 5n, [50, 60], LOCK_LOST)
      .revoke(K, null, [61, 62], { type: 'not-held' })
      .acquire(K, 'b', 'sb', [70, 80], granted(7n, 'b', 'sb'))
      .revoke(K, 5n, [90, 95], { type: 'fenced-out' });
    expect((await verdictOf(h)).verdict).toBe('ok');
  });

  it('a lease may lapse once its TTL has passed since the last renew was sent', async () => {
    const h = twoWorkers(3_000)
      .acquire(K, 'a', 'sa', [10, 20], granted(5n, 'a', 'sa', 1_000))
      .renew(K, 'a', 'sa', 5n, [800, 810], granted(5n, 'a', 'sa', 1_000))
      .acquire(K, 'b', 'sb', [1_850, 1_860], granted(6n, 'b', 'sb'))
      .renew(K, 'a', 'sa', 5n, [1_900, 1_910], LOCK_LOST)
      .release(K, 'a', 5n, [1_920, 1_930], LOCK_LOST);
    expect((await verdictOf(h)).verdict).toBe('ok');
  });

  it("a holder's session lapses a TTL after its last heartbeat was sent, freeing its lock", async () => {
    const h = new HistoryBuilder()
      .open('a', 'sa', [0, 5], 1_000)
      .open('b', 'sb', [0, 5])
      .heartbeats('sb', 1_000, 3_000)
      .acquire(K, 'a', 'sa', [10, 20], granted(5n, 'a', 'sa', 6_000))
      .heartbeat('sa', [400, 405])
      .acquire(K, 'b', 'sb', [1_450, 1_460], granted(6n, 'b', 'sb'))
      .heartbeat('sa', [1_500, 1_505], { type: 'session-expired' })
      .acquire(K, 'a', 'sa', [1_510, 1_520], { type: 'session-expired' });
    expect((await verdictOf(h)).verdict).toBe('ok');
  });

  it('a closed session frees its locks at once', async () => {
    const h = twoWorkers(500)
      .acquire(K, 'a', 'sa', [10, 20], granted(5n, 'a', 'sa'))
      .close('a', 'sa', [30, 40])
      .acquire(K, 'b', 'sb', [50, 60], granted(6n, 'b', 'sb'))
      .heartbeat('sa', [70, 80], { type: 'session-unknown' });
    expect((await verdictOf(h)).verdict).toBe('ok');
  });

  it("an outage: six workers' acquires and L3 calls lost, then new sessions take over", async () => {
    const workers = Array.from({ length: 6 }, (_, i) => `w${i}`);
    const h = new HistoryBuilder();
    for (const w of workers) h.open(w, `${w}-1`, [0, 5]).heartbeats(`${w}-1`, 1_000, 2_000);
    h.acquire(K, 'w0', 'w0-1', [10, 20], granted(5n, 'w0', 'w0-1'));
    workers.forEach((w, i) => {
      // Each retries its acquire, gives up and closes its session: no answer comes back.
      for (let t = 3_000 + i * 37; t < 7_000; t += 900)
        h.acquire(K, w, `${w}-1`, [t, null], CONTENDED);
      h.close(w, `${w}-1`, [7_000 + i * 41, null]);
      h.open(w, `${w}-2`, [9_000, 9_005]).heartbeats(`${w}-2`, 10_000, 12_000);
    });
    h.acquire(K, 'w3', 'w3-2', [9_500, 9_510], granted(9n, 'w3', 'w3-2'));
    for (const w of ['w1', 'w4']) h.acquire(K, w, `${w}-2`, [9_600, 9_610], CONTENDED);
    h.release(K, 'w3', 9n, [10_000, 10_010]).acquire(
      K,
      'w5',
      'w5-2',
      [10_100, 10_110],
      granted(10n, 'w5', 'w5-2'),
    );
    const { verdict, text } = await verdictOf(h);
    expect({ verdict, text }).toEqual({ verdict: 'ok', text: expect.any(String) });
  });

  it('a history with nothing in it is ok', async () => {
    expect((await verdictOf(new HistoryBuilder())).verdict).toBe('ok');
  });
});

describe('linearizability checker: broken lock-servers are rejected, with the calls that cannot be ordered', () => {
  it('a release without the token compare frees the new holder', async () => {
    const h = twoWorkers(3_000)
      .acquire(K, 'a', 'sa', [10, 20], granted(5n, 'a', 'sa', 1_000))
      .acquire(K, 'b', 'sb', [1_200, 1_210], granted(6n, 'b', 'sb'))
      .release(K, 'a', 5n, [1_300, 1_310])
      .acquire(K, 'a', 'sa', [1_400, 1_410], granted(7n, 'a', 'sa'));
    const { verdict, text, report } = await verdictOf(h);
    expect(verdict).toBe('violation');
    const v = report.violations[0];
    expect(v.partition).toBe(`lock ${K}`);
    expect(v.core.map((op) => op.seq)).toEqual([
      h.ops[h.ops.length - 3].seq,
      h.ops[h.ops.length - 2].seq,
    ]);
    expect(text).toContain('released token 5');
    expect(text).toContain('release compares on the token');
  });

  it('an acquire that ignores a live holder', async () => {
    const h = twoWorkers(3_000)
      .acquire(K, 'a', 'sa', [10, 20], granted(5n, 'a', 'sa'))
      .renew(K, 'a', 'sa', 5n, [500, 510], granted(5n, 'a', 'sa'))
      .acquire(K, 'b', 'sb', [600, 610], granted(6n, 'b', 'sb'));
    const { verdict, report } = await verdictOf(h);
    expect(verdict).toBe('violation');
    // Either the grant or the renew proves a held token 5 with a live lease at b's grant.
    expect(report.violations[0].core).toHaveLength(2);
    expect(report.violations[0].core[1]).toBe(h.ops[h.ops.length - 1]);
    expect(report.violations[0].why).toContain('granted token 6 while the key was held by a');
  });

  it('a token that goes backwards', async () => {
    const h = twoWorkers(1_000)
      .acquire(K, 'a', 'sa', [10, 20], granted(10n, 'a', 'sa'))
      .release(K, 'a', 10n, [30, 40])
      .acquire(K, 'b', 'sb', [50, 60], granted(8n, 'b', 'sb'));
    const { verdict, report } = await verdictOf(h);
    expect(verdict).toBe('violation');
    expect(report.violations[0].why).toContain('token 8 is not above 10');
  });

  it("an acquire that ignores a live holder, while other sessions' L3 answers are lost", async () => {
    const h = twoWorkers(3_000).open('c', 'sc', [0, 5]).open('d', 'sd', [0, 5]);
    h.acquire(K, 'a', 'sa', [10, 20], granted(5n, 'a', 'sa'))
      .acquire(K, 'c', 'sc', [100, null], CONTENDED)
      .close('c', 'sc', [200, null])
      .close('d', 'sd', [210, null])
      .acquire(K, 'b', 'sb', [1_000, 1_010], granted(6n, 'b', 'sb'));
    const { verdict, text } = await verdictOf(h);
    expect(verdict).toBe('violation');
    expect(text).toMatch(/granted token 6 while the key was held by a/);
  });

  it('a grant at or below a revocation floor', async () => {
    const h = twoWorkers(1_000)
      .acquire(K, 'a', 'sa', [10, 20], granted(5n, 'a', 'sa'))
      .revoke(K, 5n, [30, 40], { type: 'revoked', revokedToken: 5n, floor: 9n })
      .acquire(K, 'b', 'sb', [50, 60], granted(8n, 'b', 'sb'));
    const { verdict, report } = await verdictOf(h);
    expect(verdict).toBe('violation');
    expect(report.violations[0].why).toContain('not above 9');
  });

  it('a session still heartbeating within its TTL cannot lose its lock to another owner', async () => {
    const h = new HistoryBuilder()
      .open('a', 'sa', [0, 5], 1_000)
      .open('b', 'sb', [0, 5])
      .acquire(K, 'a', 'sa', [10, 20], granted(5n, 'a', 'sa', 6_000))
      .heartbeat('sa', [400, 405])
      .heartbeat('sa', [1_200, 1_205])
      .acquire(K, 'b', 'sb', [1_450, 1_460], granted(6n, 'b', 'sb'));
    expect((await verdictOf(h)).verdict).toBe('violation');
  });

  it('L7 and L8 answers are checked against the holder', async () => {
    const held = twoWorkers(1_000)
      .acquire(K, 'a', 'sa', [10, 20], granted(5n, 'a', 'sa'))
      .inspect(K, [30, 40], { type: 'free' });
    expect((await verdictOf(held)).verdict).toBe('violation');
    const wrongHolder = twoWorkers(1_000)
      .acquire(K, 'a', 'sa', [10, 20], granted(5n, 'a', 'sa'))
      .inspect(K, [30, 40], { type: 'held', owner: 'b', token: 5n });
    expect((await verdictOf(wrongHolder)).verdict).toBe('violation');
    const notHeld = twoWorkers(1_000)
      .acquire(K, 'a', 'sa', [10, 20], granted(5n, 'a', 'sa'))
      .revoke(K, null, [30, 40], { type: 'not-held' });
    expect((await verdictOf(notHeld)).verdict).toBe('violation');
  });

  it('a contended answer while nobody holds the key', async () => {
    const h = twoWorkers(1_000)
      .acquire(K, 'a', 'sa', [10, 20], granted(5n, 'a', 'sa'))
      .release(K, 'a', 5n, [30, 40])
      .acquire(K, 'b', 'sb', [50, 60], CONTENDED);
    expect((await verdictOf(h)).verdict).toBe('violation');
  });

  it('a session answers after it was closed, or expires while alive', async () => {
    const afterClose = twoWorkers(1_000).close('a', 'sa', [30, 40]).heartbeat('sa', [50, 60]);
    const r1 = await verdictOf(afterClose);
    expect(r1.verdict).toBe('violation');
    expect(r1.report.violations[0].partition).toBe('session sa');
    const expiredEarly = twoWorkers(3_000).heartbeat('sa', [1_500, 1_505], {
      type: 'session-expired',
    });
    expect((await verdictOf(expiredEarly)).verdict).toBe('violation');
  });

  it('the explanation is the few calls that conflict, not the whole history', async () => {
    const h = twoWorkers(20_000);
    // 50 clean handovers on K between a and b, then a grant that ignores the holder.
    let token = 1n;
    for (let i = 0; i < 50; i++) {
      const [owner, session] = i % 2 === 0 ? ['a', 'sa'] : ['b', 'sb'];
      const t = 100 + i * 100;
      h.acquire(K, owner, session, [t, t + 10], granted(token, owner, session));
      h.release(K, owner, token, [t + 50, t + 60]);
      token++;
    }
    h.acquire(K, 'a', 'sa', [6_000, 6_010], granted(token, 'a', 'sa'));
    h.acquire(K, 'b', 'sb', [6_100, 6_110], granted(token + 1n, 'b', 'sb'));
    const { verdict, report, text } = await verdictOf(h);
    expect(verdict).toBe('violation');
    // b's last release proves token 50 was live at +5.05 s: without it a's 51 could be the
    // grant a got at +0.1 s handed back, whose lease would have run out before b's 52.
    const n = h.ops.length;
    expect(report.violations[0].core).toEqual([h.ops[n - 3], h.ops[n - 2], h.ops[n - 1]]);
    expect(report.violations[0].minimal).toBe(true);
    expect(text).toMatch(
      /#\d+ \+6\.\d+ s\.\.\+6\.\d+ s b \[session sb\] acquire payout:acc-1 → 200 token 52/,
    );
  });
});

describe('linearizability checker: limits', () => {
  it('a search over its budget is reported undecided, never hangs', async () => {
    const h = twoWorkers(100_000);
    for (let i = 0; i < 2_000; i++) {
      h.acquire(K, 'a', 'sa', [i * 50, i * 50 + 10], granted(BigInt(i + 1), 'a', 'sa'));
      h.release(K, 'a', BigInt(i + 1), [i * 50 + 20, i * 50 + 30]);
    }
    const r = await checkLockHistory(h.ops, { partitionStepsMax: 300 });
    expect(r.verdict).toBe('undecided');
    expect(r.undecided[0]).toEqual({ partition: `lock ${K}`, reason: 'step budget spent' });
  });
});

describe('linearizability checker over recorded calls', () => {
  const base = {
    ownerId: 'a',
    fencingToken: null,
    outcome: 'answered' as const,
    responseAt: 0,
  };
  const call = (
    c: Partial<LockCall> & Pick<LockCall, 'method' | 'url'>,
    seq: number,
  ): LockCall => ({
    ...base,
    seq,
    request: null,
    requestAt: seq * 10,
    status: 200,
    response: null,
    ...c,
    responseAt: c.outcome === 'lost' || c.outcome === 'pending' ? null : seq * 10 + 5,
  });
  const grant = (token: string, owner: string, session: string) => ({
    key: K,
    ownerId: owner,
    sessionId: session,
    fencingToken: token,
    acquiredAt: '2026-01-01T00:00:00.000Z',
    expiresAt: '2026-01-01T00:00:06.000Z',
  });
  const sa = '11111111-1111-1111-1111-111111111111';
  const sb = '22222222-2222-2222-2222-222222222222';
  const calls = (bTakesOver: boolean): LockCall[] =>
    [
      {
        method: 'POST',
        url: '/v1/sessions',
        status: 201,
        response: { sessionId: sa, ttlMillis: 3000 },
      },
      {
        method: 'POST',
        url: '/v1/sessions',
        ownerId: 'b',
        status: 201,
        response: { sessionId: sb, ttlMillis: 3000 },
      },
      {
        method: 'POST',
        url: `/v1/locks/${K}/acquire`,
        request: { sessionId: sa },
        response: grant('5', 'a', sa),
      },
      {
        method: 'POST',
        url: `/v1/locks/${K}/acquire`,
        ownerId: 'b',
        request: { sessionId: sb },
        ...(bTakesOver
          ? { response: grant('6', 'b', sb) }
          : { status: 409, response: { code: 'LOCK_CONTENDED' } }),
      },
      {
        method: 'POST',
        url: `/v1/locks/${K}/acquire`,
        ownerId: 'b',
        request: { sessionId: sb },
        status: 403,
        response: { code: 'FORBIDDEN' },
      },
      {
        method: 'POST',
        url: `/v1/sessions/${sa}/heartbeat`,
        outcome: 'lost' as const,
        status: null,
      },
      {
        method: 'DELETE',
        url: `/v1/locks/${K}`,
        fencingToken: '5',
        status: 503,
        response: { code: 'NOT_LEADER' },
      },
      {
        method: 'POST',
        url: `/v1/locks/${K}/acquire`,
        ownerId: 'b',
        request: { sessionId: sb },
        outcome: 'pending' as const,
        status: null,
      },
    ].map((c, i) => call(c, i));

  it('reads L1–L8 as the recorder captured them: a 5xx or lost answer is indeterminate, a 403 says nothing', async () => {
    const r = await checkRecordedLockHistory({ calls: calls(false), callsDropped: 0 });
    expect(r.verdict).toBe('ok');
    expect(r.calls).toBe(8);
    // The 403 and the lost heartbeat carry no information; the 503 release and the pending acquire are indeterminate.
    expect(r.ops).toBe(6);
    expect(r.indeterminate).toBe(2);
  });

  it('rejects the same calls when the second owner was granted the held key', async () => {
    const r = await checkRecordedLockHistory({ calls: calls(true), callsDropped: 0 });
    expect(r.verdict).toBe('violation');
    expect(r.violations[0].why).toContain('while the key was held by a');
  });

  it('a history saved with --lock-history reads back to the same verdict (lin-check)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'lin-history-'));
    try {
      const file = path.join(dir, 'history.jsonl');
      await writeLockHistory(file, calls(true));
      const back = await readLockHistory(file);
      expect(back).toEqual(calls(true));
      const r = await checkRecordedLockHistory({ calls: back, callsDropped: 0 });
      expect(r.verdict).toBe('violation');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a history with calls the recorder could not keep is undecided, not ok', async () => {
    const r = await checkRecordedLockHistory({ calls: calls(false), callsDropped: 3 });
    expect(r.verdict).toBe('undecided');
    expect(r.notes).toEqual(['3 calls were not recorded (history limit)']);
  });
});
