import { http, migratedDatabase, withClient } from '@dlock/testing';
import { startInProcess, type RunningLockServer } from '../support/in-process';

/**
 * pg backend: GET /v1/revocations pages in numeric floor order, also where
 * the floors change their number of digits. The reconciler reads the list
 * from its last floor on (docs/reconciler.md): a page in text order ('10'
 * before '9') would hand it a later floor first, and the floors it skipped
 * would never be read.
 */
describe('pg backend: revocations in floor order across a digit boundary', () => {
  let dbUrl: string;
  let server: RunningLockServer;

  beforeAll(async () => {
    dbUrl = await migratedDatabase('lockdb');
    await withClient(dbUrl, (c) =>
      c.query(`
        INSERT INTO lock_revocation (revocation_id, lock_key, revoked_token, new_token_floor, operator,
                                     reason, holder_owner_id, holder_session_id, revoked_at)
        SELECT gen_random_uuid(), 'payout:acct-' || f, f - 1, f, 'operator', 'order test', 'alice',
               gen_random_uuid(), now()
          FROM unnest(ARRAY[9, 10, 11, 100]) f`),
    );
    server = await startInProcess({ LOCK_BACKEND: 'pg', LOCKDB_URL: dbUrl });
  });
  afterAll(() => server.stop());

  const floors = async (query: string): Promise<string[]> => {
    const res = await http('GET', `${server.url}/v1/revocations${query}`);
    expect(res.status).toBe(200);
    return res.body.items.map((i: { newTokenFloor: string }) => i.newTokenFloor);
  };

  it('answers the lowest floors first, page after page', async () => {
    expect(await floors('?afterFloor=0')).toEqual(['9', '10', '11', '100']);
    expect(await floors('?afterFloor=0&limit=2')).toEqual(['9', '10']);
    expect(await floors('?afterFloor=10&limit=2')).toEqual(['11', '100']);
  });
});
