import { ProofRejectedError } from './grant-proof';
import { checkRevocationNotice, revocationNoticeClaims } from './revocation-notice';

/** The claim checks of a revocation notice (docs/security.md, "Revocation notices"). */

const GOOD = {
  key: 'payout:acct-1',
  floor: '9007199254740993',
  rid: '0f6b6a8e-9d7e-4d0b-8d7e-2b1a3f4c5d6e',
  req: 'operator-alice',
  apr: 'operator-bob',
  iat: 1_800_000_000,
};

function refusal(fn: () => unknown): { reason: string; proof: string } {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ProofRejectedError);
    return { reason: (err as ProofRejectedError).reason, proof: (err as ProofRejectedError).proof };
  }
  throw new Error('accepted what should have been refused');
}

it('accepts well-formed claims, a null approver included, and keeps the floor exact', () => {
  expect(revocationNoticeClaims(GOOD)).toEqual(GOOD);
  expect(revocationNoticeClaims({ ...GOOD, apr: null }).apr).toBeNull();
  const floor = checkRevocationNotice(revocationNoticeClaims(GOOD), {
    key: 'payout:acct-1',
    floor: 9007199254740993n,
    revocationId: GOOD.rid,
  });
  expect(floor).toBe(9007199254740993n);
});

it.each<[string, Record<string, unknown>]>([
  ['a floor past int64', { floor: '9223372036854775808' }],
  ['a zero floor', { floor: '0' }],
  ['a floor as a number', { floor: 5 }],
  ['a leading zero', { floor: '05' }],
  ['a revocation id that is no uuid', { rid: 'r-1' }],
  ['no requester', { req: undefined }],
  ['an approver with a control character', { apr: 'bob\n' }],
  ['an empty key', { key: '' }],
  ['a fractional iat', { iat: 1.5 }],
])('refuses %s as malformed', (_what, change) => {
  expect(refusal(() => revocationNoticeClaims({ ...GOOD, ...change }))).toEqual({
    proof: 'revocation',
    reason: 'malformed',
  });
});

it.each<[string, Parameters<typeof checkRevocationNotice>[1], string]>([
  ['another key', { key: 'payout:acct-2' }, 'lock-key'],
  ['another floor', { key: GOOD.key, floor: 9223372036854775807n }, 'mismatch'],
  ['another revocation', { key: GOOD.key, revocationId: 'x' }, 'mismatch'],
])('refuses a notice for %s', (_what, expectation, reason) => {
  const claims = revocationNoticeClaims(GOOD);
  expect(refusal(() => checkRevocationNotice(claims, expectation)).reason).toBe(reason);
});
