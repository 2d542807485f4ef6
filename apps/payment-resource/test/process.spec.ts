import { execFile } from 'node:child_process';
import { railClientRef } from '@dlock/payout-contract';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  REPO_ROOT,
  http,
  migratedDatabase,
  spawnApp,
  waitFor,
  withClient,
  type RunningApp,
  testAuthEnv,
} from '@dlock/testing';
import { bodies, ledgerInvariants, write } from './support';

const run = promisify(execFile);
const MAIN = path.join(REPO_ROOT, 'dist', 'apps', 'payment-resource', 'main.js');
const CLI = path.join(
  REPO_ROOT,
  'dist',
  'apps',
  'payment-resource',
  'src',
  'cli',
  'fixtures.cli.js',
);

async function node(script: string, args: string[], env: Record<string, string>) {
  try {
    const { stdout, stderr } = await run(process.execPath, [script, ...args], {
      env: { PATH: process.env.PATH ?? '', ...(await testAuthEnv()), ...env },
      timeout: 30_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('payment-resource as a real process, and the fixture CLI', () => {
  let dbUrl: string;
  let app: RunningApp;
  beforeAll(async () => {
    dbUrl = await migratedDatabase('paydb');
    app = await spawnApp('payment-resource', { PAYDB_URL: dbUrl, LOG_LEVEL: 'warn' });
  });
  afterAll(() => app?.stop());

  it('seeds demo data through the ledger, once', async () => {
    const seeded = await node(CLI, ['seed', '--accounts', '4', '--payouts', '12'], {
      PAYDB_URL: dbUrl,
    });
    expect(seeded).toMatchObject({ code: 0 });
    expect(JSON.parse(seeded.stdout)).toEqual({
      command: 'seed',
      skipped: false,
      accounts: 4,
      payouts: 12,
    });
    const again = await node(CLI, ['seed', '--accounts', '4', '--payouts', '12'], {
      PAYDB_URL: dbUrl,
    });
    expect(JSON.parse(again.stdout)).toEqual({
      command: 'seed',
      skipped: true,
      accounts: 0,
      payouts: 0,
    });
    expect(await ledgerInvariants(dbUrl)).toEqual({ unbalancedGroups: 0, wrongBalances: 0 });
    const list = await http('GET', `${app.url}/v1/payouts?state=PENDING&limit=500`);
    expect(list.body.items).toHaveLength(12);
    const p4 = (await http('GET', `${app.url}/v1/payouts/${list.body.items[0].payoutId}`)).body;
    expect(p4).toMatchObject({
      state: 'PENDING',
      clientRef: railClientRef(p4.payoutId),
      currency: 'EUR',
      attemptCount: 0,
      submissions: [],
    });
    const p5 = (await http('GET', `${app.url}/v1/accounts/${p4.accountId}`)).body;
    expect(p5).toMatchObject({ balanceMinor: 1_000_000, ledgerSumMinor: 1_000_000, fence: '0' });
  });

  it('creates one account and one payout on demand', async () => {
    const acc = await node(
      CLI,
      ['create-account', '--currency', 'USD', '--opening-balance', '5000'],
      {
        PAYDB_URL: dbUrl,
      },
    );
    expect(acc.code).toBe(0);
    const { accountId } = JSON.parse(acc.stdout);
    const po = await node(CLI, ['create-payout', '--account', accountId, '--amount', '1200'], {
      PAYDB_URL: dbUrl,
    });
    expect(po.code).toBe(0);
    const { payoutId } = JSON.parse(po.stdout);
    const p4 = (await http('GET', `${app.url}/v1/payouts/${payoutId}`)).body;
    expect(p4).toMatchObject({ accountId, amountMinor: 1_200, currency: 'USD', state: 'PENDING' });
    expect((await http('GET', `${app.url}/v1/accounts/funding-USD`)).body).toMatchObject({
      kind: 'FUNDING',
      balanceMinor: -5_000,
      ledgerSumMinor: -5_000,
    });
  });

  it('feeds payouts that are each funded, so the demo never runs dry', async () => {
    const feedDb = await migratedDatabase('paydb');
    const env = { PAYDB_URL: feedDb };
    expect(
      (
        await node(
          CLI,
          ['seed', '--accounts', '3', '--payouts', '0', '--opening-balance', '0'],
          env,
        )
      ).code,
    ).toBe(0);
    const feed = execFile(process.execPath, [CLI, 'feed', '--rate', '20', '--max-amount', '900'], {
      env: { PATH: process.env.PATH ?? '', ...env },
    });
    const exited = new Promise<number | null>((resolve) => feed.once('exit', resolve));
    const fed = () =>
      withClient(feedDb, async (c) =>
        Number((await c.query(`SELECT count(*) AS n FROM payout`)).rows[0].n),
      );
    const deadline = Date.now() + 20_000;
    while ((await fed()) < 10 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    feed.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(await fed()).toBeGreaterThanOrEqual(10);
    // Every account can pay all of its pending payouts: none would end FAILED for want of funds.
    const short = await withClient(
      feedDb,
      async (c) =>
        (
          await c.query(`
          SELECT a.account_id FROM account a
            JOIN payout p ON p.account_id = a.account_id AND p.state = 'PENDING'
           GROUP BY a.account_id, a.balance_minor
          HAVING a.balance_minor < sum(p.amount_minor)`)
        ).rows,
    );
    expect(short).toEqual([]);
    expect(await ledgerInvariants(feedDb)).toEqual({ unbalancedGroups: 0, wrongBalances: 0 });
  });

  it('refuses bad CLI input with usage and exit code 2', async () => {
    for (const args of [
      [],
      ['nope'],
      ['seed', '--accounts', 'x'],
      ['create-payout', '--amount', '5'],
      ['seed', '--bogus'],
    ]) {
      const res = await node(CLI, args, { PAYDB_URL: dbUrl });
      expect(res.code).toBe(2);
      expect(res.stderr).toContain('usage');
    }
    expect((await node(CLI, ['seed'], {})).stderr).toContain('PAYDB_URL');
  });

  it('is ready when paydb answers, logs fenced_out and counts it', async () => {
    expect((await http('GET', `${app.url}/health/ready`)).status).toBe(200);
    const list = await http('GET', `${app.url}/v1/payouts?state=PENDING&limit=1`);
    const payoutId: string = list.body.items[0].payoutId;
    expect((await write(app.url, 'claim', payoutId, 7n, bodies.claim())).status).toBe(200);
    const stale = await write(app.url, 'rail-outcome', payoutId, 6n, bodies.submitted(), {
      owner: 'zombie',
    });
    expect(stale.status).toBe(409);
    const metrics = (await http('GET', `${app.url}/metrics`)).text;
    expect(metrics).toContain('lock_fenced_out_total{resource="account"} 1');
    expect(metrics).toContain(
      'payment_write_seconds_count{operation="rail_outcome",result="fenced_out"} 1',
    );
    // The log line reaches this process through the child's stdout pipe, possibly after the answer.
    const line = await waitFor(
      async () =>
        app
          .output()
          .split('\n')
          .find((l) => l.includes('"event":"fenced_out"')),
      5_000,
      'the fenced_out log line',
    );
    expect(JSON.parse(line)).toMatchObject({
      event: 'fenced_out',
      resource: 'account',
      presentedToken: '6',
      highestToken: '7',
      ownerId: 'zombie',
      // The route runs without the request logger context; the trace id is passed explicitly.
      traceId: stale.body.traceId,
    });
    expect(stale.body.traceId).toMatch(/^[0-9a-f]{32}$/);
    await withClient(dbUrl, async (c) => {
      const r = await c.query(`SELECT state FROM payout WHERE payout_id = $1`, [payoutId]);
      expect(r.rows[0].state).toBe('CLAIMED');
    });
  });

  it('refuses to start with the fence off outside the harness, or with bad config', async () => {
    const off = await node(MAIN, [], {
      PAYDB_URL: dbUrl,
      PAYMENT_FENCING_ENABLED: 'false',
      PORT: '0',
    });
    expect(off.code).toBe(1);
    expect(off.stderr).toContain('PAYMENT_FENCING_ENABLED');
    const noDb = await node(MAIN, [], { PORT: '0' });
    expect(noDb.code).toBe(1);
    expect(noDb.stderr).toContain('PAYDB_URL');
    const badSla = await node(MAIN, [], {
      PAYDB_URL: dbUrl,
      PAYOUT_AMBIGUOUS_SLA_MS: '4h',
      PORT: '0',
    });
    expect(badSla.code).toBe(1);
    expect(badSla.stderr).toContain('PAYOUT_AMBIGUOUS_SLA_MS');
  });
});
