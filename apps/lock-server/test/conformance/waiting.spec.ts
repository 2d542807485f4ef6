import { waitFor, scrapeSeries } from '@dlock/testing';
import { LockStore } from '../../src/locks/persistence/lock-store.port';
import { BACKENDS } from '../support/backends';
import { LockApi } from '../support/lock-client';

/**
 * A waiting acquire (L4 waitMillis) is handed the key as soon as it is freed
 * through this server: by a release, a revoke or the holder's session close.
 * The poll is set slower than any of these waits, so only the backend's own
 * wake-up (pg: the in-process signal, LISTEN/NOTIFY across replicas; etcd: the
 * watch) can meet them.
 */
describe.each(BACKENDS)('waiting acquires and activity gauges [$name]', (backend) => {
  let server: Awaited<ReturnType<typeof backend.start>>;
  let api: LockApi;

  beforeAll(async () => {
    server = await backend.start({ LOCK_WAIT_POLL_MS: '5000' });
    api = new LockApi(server.url);
  });
  afterAll(() => server.stop());

  it('the activity gauges count live sessions and live grants', async () => {
    const read = async () => [
      await scrapeSeries(server.url, 'lock_server_active_sessions', 'throw'),
      await scrapeSeries(server.url, 'lock_server_active_grants', 'throw'),
    ];
    const [sessions, grants] = await read();
    const s1 = await api.session('g1', 30_000);
    await api.session('g2', 30_000);
    expect((await api.acquire('gauge:1', s1, 'g1')).status).toBe(200);
    expect((await api.acquire('gauge:2', s1, 'g1')).status).toBe(200);
    expect(await read()).toEqual([sessions + 2, grants + 2]);
  });

  it.each(['release', 'revoke', 'session close'] as const)(
    'a %s wakes a waiting acquire at once, not at the next poll',
    async (free) => {
      const holder = await api.session('holder', 30_000);
      const waiter = await api.session('waiter', 30_000);
      const key = `wake:${free.replace(' ', '-')}`;
      const grant = await api.acquire(key, holder, 'holder', { ttlMillis: 30_000 });
      expect(grant.status).toBe(200);
      const waiting = api.acquire(key, waiter, 'waiter', { waitMillis: 20_000 });
      await waitFor(
        async () => (await scrapeSeries(server.url, 'lock_server_waiting_acquires', 'throw')) === 1,
        10_000,
        'the acquire to wait',
      );
      const freedAt = Date.now();
      const freed =
        free === 'release'
          ? await api.release(key, holder, grant.body.fencingToken, 'holder')
          : free === 'revoke'
            ? await api.revoke(key, { operator: 'ops', reason: 'wake test' })
            : await api.closeSession(holder, 'holder');
      expect(freed.status).toBe(free === 'revoke' ? 200 : 204);
      const res = await waiting;
      expect({ status: res.status, ownerId: res.body.ownerId }).toEqual({
        status: 200,
        ownerId: 'waiter',
      });
      // A poll would take 5 s; a wake-up takes milliseconds. 3 s is margin for a loaded machine.
      expect(Date.now() - freedAt).toBeLessThan(3_000);
      expect((await api.release(key, waiter, res.body.fencingToken, 'waiter')).status).toBe(204);
    },
  );

  it('a release through another replica wakes a waiting acquire at once, not at the next poll', async () => {
    const twin = await server.replica();
    try {
      const twinApi = new LockApi(twin.url);
      const handOffsMs: number[] = [];
      for (let round = 0; round < 5; round++) {
        const key = `wake:replica-${round}`;
        const holder = await api.session('holder', 30_000);
        const waiter = await twinApi.session('waiter', 30_000);
        const grant = await api.acquire(key, holder, 'holder', { ttlMillis: 30_000 });
        expect(grant.status).toBe(200);
        const waiting = twinApi.acquire(key, waiter, 'waiter', { waitMillis: 20_000 });
        // The twin has announced its waiter once its gauge counts it (and a moment to deliver it).
        await waitFor(
          async () => (await scrapeSeries(twin.url, 'lock_server_waiting_acquires', 'throw')) >= 1,
          10_000,
          'the acquire to wait on the twin',
        );
        await new Promise((r) => setTimeout(r, 200));
        const freedAt = performance.now();
        expect((await api.release(key, holder, grant.body.fencingToken, 'holder')).status).toBe(
          204,
        );
        const res = await waiting;
        handOffsMs.push(performance.now() - freedAt);
        expect({ status: res.status, ownerId: res.body.ownerId }).toEqual({
          status: 200,
          ownerId: 'waiter',
        });
        expect(BigInt(res.body.fencingToken) > BigInt(grant.body.fencingToken)).toBe(true);
      }
      // A poll would take 5 s each time; a wake-up takes milliseconds (3 s: a loaded machine).
      expect(Math.max(...handOffsMs)).toBeLessThan(3_000);
    } finally {
      await twin.stop();
    }
  });

  // Between two tries a waiting acquire sleeps until a wake-up or the poll,
  // whichever is first; a backend whose wait returned at once would turn every
  // waiter into a loop of acquire statements against the lock database.
  it('a waiter that is never woken asks the store again only at the poll or its deadline', async () => {
    const holder = await api.session('holder', 30_000);
    const waiter = await api.session('waiter', 30_000);
    expect((await api.acquire('poll:1', holder, 'holder', { ttlMillis: 30_000 })).status).toBe(200);
    const store = server.app.get(LockStore);
    const tries = jest.spyOn(store, 'acquire');
    try {
      const res = await api.acquire('poll:1', waiter, 'waiter', { waitMillis: 1_500 });
      expect(res.status).toBe(409);
      // The first try and one when the wait ends (the 5 s poll never comes); one spare for a
      // backend that wakes once for nothing. A wait that returned at once makes hundreds.
      expect(tries.mock.calls.length).toBeGreaterThanOrEqual(2);
      expect(tries.mock.calls.length).toBeLessThanOrEqual(3);
    } finally {
      tries.mockRestore();
    }
  });
});
