import { ProofRejectedError } from '@dlock/lock-api';
import type { FencedGrantHeaders } from '@dlock/http-contract';
import {
  PAYOUT_STATES,
  registerPayoutVocabulary,
  transition,
  type RailOutcomeKind,
  type PayoutState,
  type RailReceiptClaims,
} from '@dlock/payout-contract';
import { balancedPair } from '../../ledger/domain/ledger.rules';
import type { Payout } from '../persistence/payout.repository';
import {
  fastTransition,
  logOf,
  patchOf,
  predicted,
  type PayoutCommand,
  type Written,
} from './payout-command.types';
import {
  abandonCommand,
  claimCommand,
  postCommand,
  railOutcomeCommand,
  resolveCommand,
} from './payout-commands.rules';
import type { Evidence } from './receipt-check.service';

// What payment-resource's module registers before it serves (docs/extending.md).
registerPayoutVocabulary();

const ACCOUNT = 'acct-1';
const CLEARING = 'clearing-EUR';
const SUBMISSION = '6f1d1a52-4a57-4c1e-9d0e-0c2f3b1e7a10';
const grant: FencedGrantHeaders = {
  token: 42n,
  ownerId: 'worker-a',
  idempotencyKey: 'key-1',
  proof: 'proof',
  traceId: 'trace-1',
};

function payout(state: PayoutState, extra: Partial<Payout> = {}): Payout {
  const at = new Date(0);
  return {
    payoutId: '0b8e4a3c-1f1e-4f4e-8c1a-2b3c4d5e6f70',
    accountId: ACCOUNT,
    amountMinor: 500,
    currency: 'EUR',
    beneficiaryRef: 'ben-1',
    clientRef: 'client-1',
    state,
    attemptCount: 1,
    claimedBy: null,
    tokenStamp: 41n,
    submissionId: null,
    railReference: null,
    failureReason: null,
    createdAt: at,
    claimedAt: null,
    submittedAt: null,
    ambiguousAt: state === 'RAIL_AMBIGUOUS' ? at : null,
    settledAt: null,
    updatedAt: at,
    ...extra,
  };
}

/** A genuine receipt of this payout's submission, as ReceiptCheck.read answers it. */
function receipt(p: Payout, out: RailReceiptClaims['out']): Evidence {
  return {
    claims: {
      pid: p.payoutId,
      sid: SUBMISSION,
      out,
      ref: 'ref-1',
      acc: p.accountId,
      amt: p.amountMinor,
      cur: p.currency,
      ben: p.beneficiaryRef,
      tok: '42',
      sub: grant.ownerId,
      at: 1,
      iat: 1,
    },
  };
}

const RAIL_OUTCOME_KINDS: RailOutcomeKind[] = ['SUBMITTED', 'ACKED', 'REJECTED', 'AMBIGUOUS'];
const account = { balanceMinor: 2_000, currency: 'EUR' };
const everyAccountKnown = () => true;

/** Every fenced command, on the payout given (its receipt, when one is needed, made for it). */
function commands(p: Payout): PayoutCommand<object>[] {
  const rail = RAIL_OUTCOME_KINDS.map((outcome) =>
    railOutcomeCommand(
      p.payoutId,
      grant,
      { outcome, submissionId: SUBMISSION, railReference: 'ref-1' },
      outcome === 'ACKED' || outcome === 'REJECTED' ? receipt(p, outcome) : null,
      () => 'signed-instruction',
    ),
  );
  const body = { submissionId: SUBMISSION, railReference: 'ref-1' };
  const expectedState = p.state === 'CLAIMED' ? 'CLAIMED' : 'PENDING';
  return [
    claimCommand(p.payoutId, grant, { expectedState }),
    ...rail,
    postCommand(p.payoutId, grant, { ...body, railOutcome: 'ACKED' }, receipt(p, 'ACKED'), 1),
    resolveCommand(
      p.payoutId,
      grant,
      { ...body, resolution: 'ACKED', evidence: 'e' },
      receipt(p, 'ACKED'),
    ),
  ];
}

describe('payout commands, each described once (docs/payment-resource.md)', () => {
  it('in every state, the fast path and the transaction take the same decision and the same row', () => {
    for (const state of PAYOUT_STATES) {
      const found = payout(state);
      for (const cmd of commands(found)) {
        const plan = fastTransition(cmd, { payout: found, account }, everyAccountKnown);
        const refusal = cmd.refusal(found);
        if (refusal !== null || !cmd.fastPath) {
          expect(plan).toBeNull();
          continue;
        }
        // What the transaction writes for the same step.
        const step = cmd.step(found);
        const table = transition(state, step.event);
        expect(table.allowed).toBe(true);
        expect(plan).not.toBeNull();
        expect(plan?.to).toBe(table.allowed && table.to);
        expect(plan?.patch).toEqual(patchOf(found, step, grant.token));
        expect(plan?.log).toEqual(logOf(found, step, grant));
        expect(plan?.funded).toBe(step.funded !== undefined);
        expect(
          plan?.movement?.entries.map(({ accountId, amountMinor }) => [accountId, amountMinor]),
        ).toEqual(
          step.legs && [
            [step.legs.debit, -step.legs.amountMinor],
            [step.legs.credit, step.legs.amountMinor],
          ],
        );
      }
    }
  });

  it('a claim from PENDING is written only if funded; short, FAILED is committed with its 422', () => {
    const found = payout('PENDING', { attemptCount: 0 });
    const cmd = claimCommand(found.payoutId, grant, { expectedState: 'PENDING' });
    const plan = fastTransition(cmd, { payout: found, account }, everyAccountKnown);
    expect(plan).toMatchObject({ to: 'CLAIMED', funded: true });
    expect(plan?.outcome.body).toEqual({
      payoutId: found.payoutId,
      state: 'CLAIMED',
      claimToken: '42',
      accountFence: '42',
      attemptCount: 1,
      idempotencyKey: 'key-1',
    });
    const short = cmd.step(found).funded?.short(120);
    expect(short?.event).toBe('CLAIM_INSUFFICIENT_FUNDS');
    const after = predicted(found, short!, grant.token);
    expect(after).toMatchObject({ state: 'FAILED', failureReason: 'INSUFFICIENT_FUNDS' });
    const answer = short?.answer({
      before: found,
      after,
      fence: 42n,
      entries: [],
      balanceMinor: null,
    });
    expect(answer?.kind === 'committed-error' && answer.error.details).toEqual({
      payoutId: found.payoutId,
      accountId: ACCOUNT,
      state: 'FAILED',
      amountMinor: 500,
      availableMinor: 120,
    });
    expect(cmd.step(payout('CLAIMED')).funded).toBeUndefined();
  });

  it('a claim whose expectedState moved on is a stale claim, not an invalid transition', () => {
    const cmd = claimCommand('p', grant, { expectedState: 'PENDING' });
    expect(cmd.refusal(payout('CLAIMED'))).toEqual({
      kind: 'stale-claim',
      expectedState: 'PENDING',
    });
    expect(cmd.refusal(payout('POSTED'))).toMatchObject({ kind: 'stale-claim' });
    expect(cmd.refusal(payout('PENDING'))).toBeNull();
  });

  it('a post books the account-to-clearing pair and answers the balance it leaves', () => {
    const found = payout('RAIL_ACKED', { submissionId: SUBMISSION });
    const body = {
      submissionId: SUBMISSION,
      railReference: 'ref-1',
      railOutcome: 'ACKED' as const,
    };
    const cmd = postCommand(found.payoutId, grant, body, receipt(found, 'ACKED'), 1);
    const plan = fastTransition(cmd, { payout: found, account }, everyAccountKnown);
    const pair = balancedPair(ACCOUNT, CLEARING, 500);
    expect(plan?.movement?.entries).toMatchObject(pair);
    expect(plan?.outcome.body).toMatchObject({ state: 'POSTED', balanceMinor: 1_500 });
    const after = predicted(found, cmd.step(found), grant.token);
    expect(() => plan?.verify(after, 1_500)).not.toThrow();
    // The statement left another balance than the answer names: a defect, the request fails.
    expect(() => plan?.verify(after, 1_400)).toThrow(/recorded answer/);
    // The statement creates no account and the transaction checks the currency: both take it.
    expect(fastTransition(cmd, { payout: found, account }, () => false)).toBeNull();
    const usd = { ...account, currency: 'USD' };
    expect(fastTransition(cmd, { payout: found, account: usd }, everyAccountKnown)).toBeNull();
  });

  it('an outcome of another submission or on a refused receipt never takes the fast path', () => {
    const found = payout('RAIL_SUBMITTED', { submissionId: SUBMISSION });
    const other = railOutcomeCommand(
      found.payoutId,
      grant,
      { outcome: 'AMBIGUOUS', submissionId: '11111111-2222-4333-8444-555555555555' },
      null,
      () => 'x',
    );
    expect(other.refusal(found)).toMatchObject({ kind: 'other-submission' });
    expect(fastTransition(other, { payout: found, account }, everyAccountKnown)).toBeNull();
    const refused = new ProofRejectedError('receipt', 'missing', 'no receipt');
    const unproven = railOutcomeCommand(
      found.payoutId,
      grant,
      { outcome: 'ACKED', submissionId: SUBMISSION, railReference: 'ref-1' },
      { refused },
      () => 'x',
    );
    expect(unproven.refusal(found)).toEqual({ kind: 'receipt', error: refused });
    expect(fastTransition(unproven, { payout: found, account }, everyAccountKnown)).toBeNull();
  });

  it('SUBMITTED answers the instruction signed for the payout as found, and the row it leaves', () => {
    const found = payout('CLAIMED');
    const signed: Payout[] = [];
    const cmd = railOutcomeCommand(
      found.payoutId,
      grant,
      { outcome: 'SUBMITTED', submissionId: SUBMISSION.toUpperCase() },
      null,
      (p) => (signed.push(p), 'signed-instruction'),
    );
    const plan = fastTransition(cmd, { payout: found, account }, everyAccountKnown);
    expect(signed).toEqual([found]);
    expect(plan?.outcome.body).toEqual({
      payoutId: found.payoutId,
      state: 'RAIL_SUBMITTED',
      previousState: 'CLAIMED',
      outcome: 'SUBMITTED',
      railInstruction: 'signed-instruction',
      submissionId: SUBMISSION,
      railReference: null,
      tokenStamp: '42',
      accountFence: '42',
    });
    const written: Payout = {
      ...found,
      state: 'RAIL_SUBMITTED',
      submissionId: SUBMISSION,
      tokenStamp: 42n,
    };
    expect(() => plan?.verify(written, 0)).not.toThrow();
    expect(() => plan?.verify({ ...written, tokenStamp: 43n }, 0)).toThrow(/recorded answer/);
  });

  it('abandon: an ambiguous payout only after the SLA, the SLA named in the refusal', () => {
    const cmd = abandonCommand('p', { operator: 'op', reason: 'why' }, 60_000);
    const ambiguous = payout('RAIL_AMBIGUOUS');
    expect(cmd.refusal(ambiguous, false)).toEqual({
      kind: 'not-allowed',
      event: 'ABANDON',
      details: { ambiguousSlaMs: 60_000 },
    });
    expect(cmd.refusal(ambiguous, true)).toBeNull();
    const step = cmd.step(ambiguous, true);
    expect(step.event).toBe('ABANDON_AFTER_SLA');
    const after = { ...predicted(ambiguous, step, null), settledAt: new Date(1_000) };
    const w: Written = { before: ambiguous, after, fence: 0n, entries: [], balanceMinor: null };
    expect(step.answer(w)).toEqual({
      kind: 'ok',
      body: {
        payoutId: 'p',
        state: 'ABANDONED',
        previousState: 'RAIL_AMBIGUOUS',
        operator: 'op',
        reason: 'why',
        abandonedAt: '1970-01-01T00:00:01.000Z',
      },
    });
    expect(patchOf(ambiguous, step, null)).toEqual({
      state: 'ABANDONED',
      failureReason: 'ABANDONED by op: why',
      stampSettledAt: true,
    });
    expect(cmd.refusal(payout('PENDING'), false)).toBeNull();
  });
});
