import { hopsOf } from '../../bench/e2e/bare-payout';
import { Substitution, type Recorded, type Template } from '../../bench/e2e/raw-payout';

/**
 * How bench:e2e's bare payout cuts a recorded payout into the requests a real
 * executor sends (bench/e2e/bare-payout.ts): statements as sql-recorder.cjs
 * records them, in the shapes the services send today.
 */
let t = 0;
const st = (app: string, text: string, conn = `${app}-1`): Recorded => ({
  t: t++,
  app,
  conn,
  db: { 'lock-server': 'lockdb_pg_1', 'payment-resource': 'paydb_1', 'rail-proxy': 'proxydb_1' }[
    app
  ]!,
  text,
  values: [],
});

const LOCK = 'lock-server';
const PAY = 'payment-resource';
const PROXY = 'rail-proxy';

/** The steady-state payout of bench/reports/e2e.md: 9 statements, no transaction. */
const steady = (): Recorded[] => [
  st(LOCK, 'WITH sess AS (SELECT ...) INSERT INTO lock_entry ...'),
  st(PAY, 'SELECT p.payout_id, p.account_id FROM payout p ...'),
  st(PAY, 'WITH fenced AS MATERIALIZED (SELECT ...) ... claim'),
  st(PAY, 'WITH fenced AS MATERIALIZED (SELECT ...) ... submitted'),
  st(PROXY, 'WITH reserved AS (INSERT INTO rail_idempotency ...)'),
  st(PROXY, 'WITH resolved AS (UPDATE rail_submission ...)'),
  st(PAY, 'WITH fenced AS MATERIALIZED (SELECT ...) ... acked'),
  st(PAY, 'WITH fenced AS MATERIALIZED (SELECT ...) ... post'),
  st(LOCK, 'UPDATE lock_entry l SET session_id = NULL ...'),
];

describe('the bare payout: a recorded payout as the requests of a real one', () => {
  it('cuts the steady-state payout into acquire, claim, SUBMITTED, submit, ACKED, post, release', () => {
    const hops = hopsOf({ statements: steady() });
    expect(hops.map((h) => [h.app, h.statements])).toEqual([
      [LOCK, [0]],
      [PAY, [1, 2]], // the claim reads, then writes
      [PAY, [3]],
      [PROXY, [4, 5]],
      [PAY, [6]],
      [PAY, [7]],
      [LOCK, [8]],
    ]);
    // the rail is called after the reservation, before the outcome
    expect(hops.map((h) => h.railAfter)).toEqual([null, null, null, 1, null, null, null]);
    // the grant signed at acquire, its proof verified at the claim and at the proxy with the
    // payout instruction signed at SUBMITTED
    expect(hops.map((h) => [h.signs, h.verifies])).toEqual([
      [1, 0],
      [0, 1],
      [1, 0],
      [0, 2],
      [0, 0],
      [0, 0],
      [0, 0],
    ]);
  });

  it('calls the rail after a reservation committed in a transaction of its own', () => {
    const s = steady();
    const proxyTx = [
      st(PROXY, 'START TRANSACTION'),
      st(PROXY, 'WITH reserved AS (INSERT INTO rail_idempotency ...)'),
      st(PROXY, 'COMMIT'),
    ];
    const statements = [...s.slice(0, 4), ...proxyTx, ...s.slice(5)];
    const proxy = hopsOf({ statements }).find((h) => h.app === PROXY)!;
    expect(proxy.statements).toEqual([4, 5, 6, 7]);
    expect(proxy.railAfter).toBe(3);
  });

  it('refuses a recording that is not shaped like a steady-state payout', () => {
    const withoutRelease = steady().slice(0, 8);
    expect(() => hopsOf({ statements: withoutRelease })).toThrow(
      /requests are lock-server → payment-resource → payment-resource → rail-proxy → payment-resource → payment-resource, not/,
    );
  });
});

describe("the replay's substitution handed from hop to hop", () => {
  it('answers the same values after a round trip through JSON', () => {
    const template: Template = {
      payoutId: '11111111-1111-4111-8111-111111111111',
      accountId: 'acct-recorded',
      statements: [],
      shared: new Set(),
      transactions: 0,
    };
    const recorded: Recorded = {
      ...st(PAY, 'SELECT fence'),
      row: { fence: '41', state: 'CLAIMED' },
    };
    const sub = new Substitution(template, '22222222-2222-4222-8222-222222222222', 'acct-now');
    sub.learn(recorded, { rows: [{ fence: '57', state: 'CLAIMED' }] });
    const values = [
      template.payoutId,
      'acct-recorded',
      '41',
      '33333333-3333-4333-8333-333333333333',
    ];
    const direct = sub.params(values);
    const handed = Substitution.restored(template, JSON.parse(JSON.stringify(sub.state())));
    expect(handed.params(values)).toEqual(direct);
    expect(direct.slice(0, 3)).toEqual(['22222222-2222-4222-8222-222222222222', 'acct-now', '57']);
  });
});
