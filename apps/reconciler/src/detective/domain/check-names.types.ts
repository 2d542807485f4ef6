/** The detective checks (docs/references.md). Each name is a fixed metric label. */
export const CHECK_NAMES = [
  'one_in_flight_payout_per_account', // INV-01
  'claim_history_consistent', // INV-01
  'ledger_group_balanced', // INV-03
  'balance_equals_ledger', // INV-03
  'one_live_submission_per_payout', // INV-02
  'submission_token_matches_claim', // INV-07
  'submission_grant_proven', // INV-07
  'token_regression', // INV-04
] as const;
export type CheckName = (typeof CHECK_NAMES)[number];

export const CHECK_INVARIANT: Record<CheckName, string> = {
  one_in_flight_payout_per_account: 'INV-01',
  claim_history_consistent: 'INV-01',
  ledger_group_balanced: 'INV-03',
  balance_equals_ledger: 'INV-03',
  one_live_submission_per_payout: 'INV-02',
  submission_token_matches_claim: 'INV-07',
  submission_grant_proven: 'INV-07',
  token_regression: 'INV-04',
};

/** The checks over kept records that announce each offender once, when first found. */
export const FINDING_EVENTS = {
  claim_history_consistent: 'claim_history_inconsistent',
  submission_grant_proven: 'submission_without_grant',
} as const satisfies Partial<Record<CheckName, string>>;
