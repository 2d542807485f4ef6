import { migratedDatabase, withClient } from '@dlock/testing';
import { startInProcess, type RunningLockServer } from '../support/in-process';
import { LockApi } from '../support/lock-client';

/** pg-only token properties: fencing_token_seq is the one source, never rewound. */
describe('pg backend: fencing_token_seq', () => {
  let dbUrl: string;
  let server: RunningLockServer;
  let api: LockApi;

  beforeAll(async () => {
    dbUrl = await migratedDatabase('lockdb');
    server = await startInProcess({ LOCK_BACKEND: 'pg', LOCKDB_URL: dbUrl });
    api = new LockApi(server.url);
  });
  afterAll(() => server.stop());

  it('a token above 2^53 round-trips exactly through L4, L5, L7, L6 and L8', async () => {
    const big = 2n ** 53n + 10n;
    await withClient(dbUrl, (c) =>
      c.query(`SELECT setval('fencing_token_seq', $1)`, [big.toString()]),
    );
    const s = await api.session('big');
    const grant = await api.acquire('big:1', s, 'big');
    expect(grant.status).toBe(200);
    expect(grant.text).toContain(`"fencingToken":"${big + 1n}"`);
    const token = grant.body.fencingToken as string;
    expect(BigInt(token)).toBe(big + 1n);
    const renew = await api.renew('big:1', s, token, { ownerId: 'big' });
    expect(renew.body.fencingToken).toBe(token);
    expect((await api.inspect('big:1')).body.fencingToken).toBe(token);
    const revoke = await api.revoke('big:1', {
      operator: 'ops',
      reason: 'round-trip check',
      expectedToken: token,
    });
    expect(revoke.status).toBe(200);
    expect(revoke.body.revokedToken).toBe(token);
    expect(BigInt(revoke.body.newTokenFloor)).toBeGreaterThan(big + 1n);
    const again = await api.acquire('big:1', s, 'big');
    expect(BigInt(again.body.fencingToken)).toBeGreaterThan(BigInt(revoke.body.newTokenFloor));
    expect((await api.release('big:1', s, again.body.fencingToken)).status).toBe(204);
  });

  it('L8 writes an audit row with operator, reason, holder and both tokens', async () => {
    const s = await api.session('audited');
    const grant = await api.acquire('audit:1', s, 'audited');
    const res = await api.revoke('audit:1', {
      operator: 'ops-kim',
      reason: 'holder wedged on rail',
    });
    const rows = await withClient(dbUrl, (c) =>
      c.query(
        `SELECT lock_key, revoked_token::text, new_token_floor::text, operator, reason,
                holder_owner_id, holder_session_id::text
         FROM lock_revocation WHERE revocation_id = $1`,
        [res.body.revocationId],
      ),
    );
    expect(rows.rows).toEqual([
      {
        lock_key: 'audit:1',
        revoked_token: grant.body.fencingToken,
        new_token_floor: res.body.newTokenFloor,
        // The authenticated caller; the body's operator is kept in the reason (docs/security.md).
        operator: 'operator',
        reason: 'holder wedged on rail [noted operator: ops-kim]',
        holder_owner_id: 'audited',
        holder_session_id: s,
      },
    ]);
  });
});
