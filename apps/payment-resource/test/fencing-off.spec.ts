import { http } from '@dlock/testing';
import { bodies, snapshot, startPaymentResource, write, type Harness } from './support';

/**
 * The harness negative control (PAYMENT_FENCING_ENABLED=false) turns off the
 * token comparison only: a write still needs a payout to write to, and bad
 * requests still get the contract's envelope, not a 500.
 */
describe('PAYMENT_FENCING_ENABLED=false: an unknown payout is still 404', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startPaymentResource({ PAYMENT_FENCING_ENABLED: 'false', DLOCK_HARNESS: '1' });
  });
  afterAll(() => h.close());

  it('a claim of a payout that does not exist answers 404 NOT_FOUND and changes nothing', async () => {
    const accountId = await h.fixtures.createAccount({ currency: 'EUR', openingBalanceMinor: 500 });
    await h.fixtures.createPayout({ accountId, amountMinor: 100 });
    const before = await snapshot(h.dbUrl);
    const missing = '3f1d2c4b-0000-4000-8000-000000000000';
    const res = await write(h.base, 'claim', missing, 5n, bodies.claim());
    expect({ status: res.status, body: res.body }).toEqual({
      status: 404,
      body: {
        code: 'NOT_FOUND',
        message: 'no such payout',
        retrySafe: false,
        details: { payoutId: missing },
        traceId: expect.stringMatching(/^[0-9a-f]{32}$/),
      },
    });
    expect(await snapshot(h.dbUrl)).toEqual(before);
    expect((await http('GET', `${h.base}/v1/accounts/${accountId}`)).body.fence).toBe('0');
  });
});
