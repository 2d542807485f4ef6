import { createFixture } from '../payout.fixture';
import { payoutLockKey } from '@dlock/payout-contract';
import { answerOf, callOnce } from '../infra/http.infra';
import { railTransfers, waitForStates } from './scenario.support';
import { ManualWorker } from './manual-worker.infra';
import type { DlockSystem } from '../dlock-system.infra';
import { Evidence, type Scenario } from './scenario.types';

/**
 * UC-06: an operator force-revokes (L8) a lock whose holder is stuck inside
 * its critical section (it has claimed the payout). The revoke advances the
 * token; a new holder recovers the CLAIMED payout under a larger token and
 * finishes it. The deposed holder's next writes, at the resource and at the
 * proxy, are FENCED_OUT, and its lease is gone (renew → LOCK_LOST).
 */
export const uc06: Scenario = {
  id: 'UC-06',
  title: 'operator force-revoke during a held lock',
  async run({ sys }) {
    const ev = new Evidence();
    const fx = await createFixture(sys.paydbUrl, {
      prefix: 'uc06',
      accounts: 1,
      payoutsPerAccount: 1,
    });
    const [account] = fx.accountIds;
    const [payout] = fx.payoutIds;
    const w1 = new ManualWorker(sys, 'uc06-w1');
    await w1.open();
    try {
      const h1 = await w1.tryAcquire(account);
      ev.expect(h1 !== null, 'W1 holds the lock');
      if (!h1) return ev.outcome();
      const t1 = h1.fencingToken;
      const claim = await w1.claim(payout, h1.fence);
      ev.expect(claim.status === 200, `W1 claimed (${claim.status})`);
      // W1 gets as far as its instruction: a genuine one, so only the fence can stop its submit.
      const marked = await w1.markSubmitted(payout, h1.fence);
      ev.expect(marked.status === 200, `W1 marked RAIL_SUBMITTED (${marked.status})`);

      const floor = await revoke(sys, ev, account, t1);
      await expectLockLost(ev, h1);
      await newHolderFinishes(sys, ev, account, payout, { t1, floor });
      // The deposed holder carries on where it stopped: its submit, then its outcome.
      await expectDeposedFenced(sys, ev, w1, h1, {
        payout,
        instruction: marked.body?.railInstruction ?? '',
      });
      ev.set('lockRevokedEvents', sys.lockServer.eventCount('lock_revoked'));
    } finally {
      await w1.close();
    }
    return ev.outcome();
  },
};

type Handle = NonNullable<Awaited<ReturnType<ManualWorker['tryAcquire']>>>;

/** L8 as an operator calls it; returns the new token floor (0 when refused). */
async function revoke(
  sys: DlockSystem,
  ev: Evidence,
  account: string,
  t1: bigint,
): Promise<bigint> {
  const revoked = await answerOf(
    callOnce<{ newTokenFloor: string }>('lock-server', sys.lockNet.url, {
      method: 'POST',
      path: `/v1/locks/${payoutLockKey(account)}/revoke`,
      body: {
        operator: 'harness-operator',
        reason: 'UC-06 stuck holder drill',
        expectedToken: t1.toString(),
      },
    }),
  );
  ev.set('revoke', revoked);
  ev.expect(revoked.status === 200, `revoke answered ${revoked.status}`);
  const floor = revoked.body ? BigInt(revoked.body.newTokenFloor) : 0n;
  ev.expect(floor > t1, 'the revoke advanced the token floor above T1');
  return floor;
}

/** The revoked holder's lease is gone: its renew is LOCK_LOST. */
async function expectLockLost(ev: Evidence, h1: Handle): Promise<void> {
  let renewCode = 'renewed';
  try {
    await h1.renew();
  } catch (err) {
    renewCode = (err as { code?: string }).code ?? String(err);
  }
  ev.set('w1Renew', renewCode);
  ev.expect(renewCode === 'LOCK_LOST', `W1's renew is LOCK_LOST (${renewCode})`);
}

/** A new holder recovers the CLAIMED payout under a token at or above the floor. */
async function newHolderFinishes(
  sys: DlockSystem,
  ev: Evidence,
  account: string,
  payout: string,
  { t1, floor }: { t1: bigint; floor: bigint },
): Promise<void> {
  const w2 = await sys.startExecutor('uc06-w2', { EXECUTOR_ACCOUNT_ID: account });
  try {
    await waitForStates(sys, [payout], (s) => s === 'POSTED', 20_000, 'the new holder to finish');
  } finally {
    await w2.stop();
  }
  const t2 = [...sys.recorder.tokensFor(payoutLockKey(account))].filter((t) => t > t1);
  ev.set('newTokens', t2.map(String));
  ev.expect(
    t2.length > 0 && t2.every((t) => t >= floor),
    'the new holder’s token is at or above the floor',
  );
}

/** The deposed holder's submit and outcome are FENCED_OUT at both guards; the rail paid once. */
async function expectDeposedFenced(
  sys: DlockSystem,
  ev: Evidence,
  w1: ManualWorker,
  h1: Handle,
  { payout, instruction }: { payout: string; instruction: string },
): Promise<void> {
  const submitted = await w1.submit(payout, h1.fence, instruction);
  const outcome = await w1.railOutcome(payout, h1.fence, {
    outcome: 'AMBIGUOUS',
    reason: 'deposed holder: submit refused',
  });
  ev.set('w1StaleWrites', {
    resource: `${outcome.status} ${outcome.code}`,
    proxy: `${submitted.status} ${submitted.code}`,
  });
  ev.expect(outcome.status === 409 && outcome.code === 'FENCED_OUT', 'the resource fenced W1');
  ev.expect(submitted.status === 409 && submitted.code === 'FENCED_OUT', 'the proxy fenced W1');
  const transfers = await railTransfers(sys, payout);
  ev.set('railTransfers', transfers);
  ev.expect(transfers === 1, 'the rail paid once');
}
