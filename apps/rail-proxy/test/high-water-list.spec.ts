import { http, migratedDatabase, testRevocationNotice, type RunningApp } from '@dlock/testing';
import { newPayout, startProxy, startStub, submit } from './rail-fixtures';

const TRACE_ID = expect.stringMatching(/^[0-9a-f]{32}$/);

describe('rail-proxy console reads: GET /v1/rail/high-water, GET /v1/safety-events', () => {
  let stub: RunningApp;
  let proxy: RunningApp;

  beforeAll(async () => {
    const db = await migratedDatabase('proxydb');
    stub = await startStub();
    proxy = await startProxy(db, stub.url);
  });
  afterAll(async () => {
    await proxy?.stop();
    await stub?.stop();
  });

  const list = (q = '') => http('GET', `${proxy.url}/v1/rail/high-water${q}`);
  const raise = (accountId: string, floor: string) =>
    http('POST', `${proxy.url}/v1/rail/high-water/${accountId}/floor`, {
      headers: { 'x-operator': 'ops-test' },
      body: { floor, notice: testRevocationNotice({ key: `payout:${accountId}`, floor }) },
    });

  it('lists every account mark by account id, int64 exact, truncated past the limit', async () => {
    expect((await list()).body).toEqual({ accounts: [], truncated: false });
    expect((await raise('acc-b', '42')).status).toBe(200);
    expect((await raise('acc-a', '9007199254740993')).status).toBe(200);
    const p = newPayout('acc-c');
    expect((await submit(proxy.url, p, '7')).status).toBe(200);

    const res = await list();
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      accounts: [
        { accountId: 'acc-a', highWater: '9007199254740993' },
        { accountId: 'acc-b', highWater: '42' },
        { accountId: 'acc-c', highWater: '7' },
      ],
      truncated: false,
    });
    expect((await list('?limit=2')).body).toEqual({
      accounts: [
        { accountId: 'acc-a', highWater: '9007199254740993' },
        { accountId: 'acc-b', highWater: '42' },
      ],
      truncated: true,
    });
    expect((await list('?limit=3')).body.truncated).toBe(false);
  });

  it('rejects a bad limit with 400 VALIDATION_FAILED', async () => {
    for (const q of [
      'limit=0',
      'limit=501',
      'limit=1e2',
      'limit=ten',
      'limit=1&limit=2',
      'after=1',
    ]) {
      const res = await list(`?${q}`);
      expect([q, res.status]).toEqual([q, 400]);
      expect(res.body).toEqual({
        code: 'VALIDATION_FAILED',
        message: expect.any(String),
        retrySafe: false,
        details: { fields: [{ field: expect.any(String), message: expect.any(String) }] },
        traceId: TRACE_ID,
      });
    }
  });

  it('serves a stale submission as a fenced_out event of its own feed', async () => {
    const p = newPayout('acc-b');
    expect((await submit(proxy.url, p, '41')).status).toBe(409);
    const res = await http('GET', `${proxy.url}/v1/safety-events?limit=500`);
    expect(res.status).toBe(200);
    expect(res.body.service).toBe('rail-proxy');
    const fenced = res.body.events.filter((e: { event: string }) => e.event === 'fenced_out');
    expect(fenced).toEqual([
      {
        seq: expect.any(Number),
        at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
        event: 'fenced_out',
        fields: expect.objectContaining({
          resource: 'rail',
          presentedToken: '41',
          highestToken: '42',
        }),
        // A refusal a caller can repeat: its repeats count here (docs/operations.md).
        count: 1,
        lastAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      },
    ]);
    expect(res.body.nextAfter).toBe(res.body.events.at(-1).seq);
  });
});
