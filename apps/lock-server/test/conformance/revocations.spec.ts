import { http } from '@dlock/testing';
import { BACKENDS } from '../support/backends';
import type { RunningLockServer } from '../support/in-process';
import { INSTANT, LockApi, TRACE_ID } from '../support/lock-client';

/**
 * GET /v1/revocations: the L8 audit records of every key in floor order, the
 * reconciler's input for revocation fencing (docs/reconciler.md). Both
 * backends answer alike.
 */
describe.each(BACKENDS)('revocations list [$name]', (backend) => {
  let server: RunningLockServer;
  let api: LockApi;
  let alice: string;

  beforeAll(async () => {
    server = await backend.start({});
    api = new LockApi(server.url);
    alice = await api.session('alice', 30_000);
  });
  afterAll(() => server.stop());

  const list = (query: string) => http('GET', `${server.url}/v1/revocations${query}`);

  async function grantAndRevoke(key: string, operator = 'ops-jane') {
    const grant = await api.acquire(key, alice, 'alice');
    expect(grant.status).toBe(200);
    // The test's caller identity is TEST_OPERATOR ('operator'), whatever the body says.
    const revoked = await api.revoke(key, { operator, reason: 'stuck worker OPS-7' });
    expect(revoked.status).toBe(200);
    return revoked.body as { revokedToken: string; newTokenFloor: string; revocationId: string };
  }

  it('lists every key’s revocations in floor order, paged by afterFloor', async () => {
    const first = await grantAndRevoke('payout:acct-rv1', 'operator');
    // A body naming someone else is a note in the reason, never the recorded actor (docs/security.md).
    const second = await grantAndRevoke('other:thing', 'ops-jane');
    const all = await list('?afterFloor=0');
    expect(all.status).toBe(200);
    expect(all.body).toEqual({
      items: [
        {
          revocationId: first.revocationId,
          key: 'payout:acct-rv1',
          revokedToken: first.revokedToken,
          newTokenFloor: first.newTokenFloor,
          operator: 'operator',
          reason: 'stuck worker OPS-7',
          revokedAt: INSTANT,
          notice: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
        },
        {
          revocationId: second.revocationId,
          key: 'other:thing',
          revokedToken: second.revokedToken,
          newTokenFloor: second.newTokenFloor,
          operator: 'operator',
          reason: 'stuck worker OPS-7 [noted operator: ops-jane]',
          revokedAt: INSTANT,
          notice: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
        },
      ],
    });
    // Each record's notice speaks of that record: its key, floor and id, and who asked
    // (docs/security.md, "Revocation notices").
    const [header, claims] = (all.body.items[0].notice as string)
      .split('.')
      .slice(0, 2)
      .map((part) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8')));
    expect(header).toMatchObject({ alg: 'EdDSA', typ: 'dlock-revocation+jws' });
    expect(claims).toEqual({
      key: 'payout:acct-rv1',
      floor: first.newTokenFloor,
      rid: first.revocationId,
      req: 'operator',
      apr: null,
      iat: expect.any(Number),
    });
    const page = await list(`?afterFloor=${first.newTokenFloor}&limit=1`);
    expect(page.body.items.map((i: { revocationId: string }) => i.revocationId)).toEqual([
      second.revocationId,
    ]);
    expect((await list(`?afterFloor=${second.newTokenFloor}`)).body).toEqual({ items: [] });
    expect((await list('?limit=1')).body.items).toHaveLength(1);
  });

  it.each([
    ['?afterFloor=-1', 'afterFloor'],
    ['?afterFloor=01', 'afterFloor'],
    ['?afterFloor=9223372036854775808', 'afterFloor'],
    ['?limit=0', 'limit'],
    ['?limit=501', 'limit'],
    ['?limit=1e2', 'limit'],
    ['?cursor=abc', 'cursor'],
  ])('%s is 400 VALIDATION_FAILED naming %s', async (query, field) => {
    const res = await list(query);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      code: 'VALIDATION_FAILED',
      message: expect.any(String),
      retrySafe: false,
      details: { fields: [{ field, message: expect.any(String) }] },
      traceId: TRACE_ID,
    });
  });
});
