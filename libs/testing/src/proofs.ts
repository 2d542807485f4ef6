import { randomUUID } from 'node:crypto';
import {
  canonicalUuid,
  GRANT_PROOF_HEADER,
  GRANT_PROOF_TYPE,
  parseFencingToken,
  REVOCATION_NOTICE_TYPE,
  type GrantProofClaims,
  type RevocationNoticeClaims,
} from '@dlock/lock-api';
import type { SubmitRequest } from '@dlock/payout-contract';
// Files of @dlock/identity and @dlock/payout-contract, not their indexes: those load
// class-validator and OpenTelemetry (the HTTP clients' tracing), which every test file would pay
// for at load.
import { SigningKeyRing } from '../../identity/src/signing-keys';
import {
  instructionClaims,
  PAYOUT_INSTRUCTION_HEADER,
  PAYOUT_INSTRUCTION_TYPE,
} from '../../payout-contract/src/payout-instruction';
import { payoutLockKey } from '../../payout-contract/src/payout-protocol';
import {
  RAIL_RECEIPT_HEADER,
  RAIL_RECEIPT_TYPE,
  receiptClaims,
  type ReceiptOutcome,
  type ReceiptSubject,
} from '../../payout-contract/src/rail-receipt';
import { testSigningKeys } from './identity';
import { withClient } from './postgres';

/**
 * Grant proofs and payout instructions signed with this test file's keys
 * (testSigningKeys, which every spawned lock-server and payment-resource
 * signs with): what a test that talks to a guard directly presents, as if
 * the lock-server had granted it. Tests about proofs make their own.
 */

let grantRing: SigningKeyRing | undefined;
let instructionRing: SigningKeyRing | undefined;
let receiptRing: SigningKeyRing | undefined;

export function testGrantProof(grant: {
  key: string;
  token: bigint | string;
  owner: string;
  sessionId?: string;
  iat?: number;
}): string {
  grantRing ??= SigningKeyRing.open(testSigningKeys().grants.keys);
  const claims: GrantProofClaims = {
    key: grant.key,
    tok: parseFencingToken(grant.token).toString(),
    sub: grant.owner,
    sid: grant.sessionId ?? randomUUID(),
    iat: grant.iat ?? Math.floor(Date.now() / 1000),
  };
  return grantRing.sign(GRANT_PROOF_TYPE, claims);
}

/**
 * A revocation notice as the lock-server would sign it over `floor` of `key`
 * (docs/security.md, "Revocation notices"): what a test presents to a guard's
 * floor raise, as if a revoke had computed that floor.
 */
export function testRevocationNotice(notice: {
  key: string;
  floor: bigint | string;
  revocationId?: string;
  requestedBy?: string;
  approvedBy?: string | null;
}): string {
  grantRing ??= SigningKeyRing.open(testSigningKeys().grants.keys);
  const claims: RevocationNoticeClaims = {
    key: notice.key,
    floor: parseFencingToken(notice.floor).toString(),
    rid: notice.revocationId ?? randomUUID(),
    req: notice.requestedBy ?? 'operator-alice',
    apr: notice.approvedBy === undefined ? 'operator-bob' : notice.approvedBy,
    iat: Math.floor(Date.now() / 1000),
  };
  return grantRing.sign(REVOCATION_NOTICE_TYPE, claims);
}

export function testInstruction(
  payout: SubmitRequest,
  token: bigint | string,
  owner: string,
): string {
  instructionRing ??= SigningKeyRing.open(testSigningKeys().instructions.keys);
  const claims = instructionClaims(payout, parseFencingToken(token), owner, Date.now());
  return instructionRing.sign(PAYOUT_INSTRUCTION_TYPE, claims);
}

/** A rail receipt signed with the tests' rail-proxy keys, as if the proxy had recorded `answer`. */
export function testRailReceipt(
  payoutId: string,
  submission: ReceiptSubject | null,
  answer: { out: ReceiptOutcome; ref?: string | null; atMs?: number },
): string {
  receiptRing ??= SigningKeyRing.open(testSigningKeys().receipts.keys);
  const claims = receiptClaims(payoutId, submission, {
    out: answer.out,
    ref: answer.ref ?? null,
    atMs: answer.atMs ?? Date.now(),
  });
  return receiptRing.sign(RAIL_RECEIPT_TYPE, claims);
}

/** What http() knows of a request to a guard: enough to sign what it would have been granted. */
export interface GuardedRequest {
  method: string;
  url: URL;
  token: string;
  owner: string;
  body: unknown;
}

/** Headers a request to one service needs besides the token: its proofs. */
export type ProofSource = (req: GuardedRequest) => Promise<Record<string, string>>;

const sources = new Map<string, ProofSource>();

/** Tells http() how to prove a fenced request to the service at `url` (spawnApp, in-process starters). */
export function registerProofSource(url: string, source: ProofSource): void {
  sources.set(new URL(url).origin, source);
}

/**
 * Adds the proofs a fenced request (one with X-Fencing-Token) to a registered
 * service needs, unless the test set X-Grant-Proof itself. A token that does
 * not parse gets none: the service refuses it before it would look.
 */
export async function withTestProofs(
  method: string,
  url: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<Record<string, string>> {
  const lower = new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const token = lower.get('x-fencing-token');
  const source = sources.get(new URL(url).origin);
  if (source === undefined || token === undefined || lower.has(GRANT_PROOF_HEADER)) return headers;
  try {
    parseFencingToken(token);
  } catch {
    return headers;
  }
  const owner = lower.get('x-owner-id') ?? '';
  return { ...(await source({ method, url: new URL(url), token, owner, body })), ...headers };
}

/** lock-server: a release proves the grant it names (L6 takes the proof of its key and token). */
export const lockServerProofs: ProofSource = (req) => {
  const m = /^\/v1\/locks\/([^/]+)$/.exec(req.url.pathname);
  if (req.method !== 'DELETE' || !m) return Promise.resolve({});
  const key = decodeURIComponent(m[1]);
  return Promise.resolve({
    [GRANT_PROOF_HEADER]: testGrantProof({ key, token: req.token, owner: req.owner }),
  });
};

interface PaidPayout {
  account_id: string;
  amount_minor: string;
  currency: string;
  beneficiary_ref: string;
}

/**
 * payment-resource: a fenced write on a payout proves its account's lock
 * (found in paydb); one that records a rail answer carries the rail-proxy's
 * receipt of what its body says (docs/rail.md, "Receipts"). A receipt the
 * test sets wins; a test that sets the grant proof gets neither.
 */
export function paymentResourceProofs(paydbUrl: string): ProofSource {
  return async (req): Promise<Record<string, string>> => {
    const m = /^\/v1\/payouts\/([^/]+)\/([a-z-]+)$/.exec(req.url.pathname);
    if (!m) return {};
    const payoutId = decodeURIComponent(m[1]);
    const payout = await withClient(paydbUrl, async (c) => {
      if (canonicalUuid(payoutId) === undefined) return null;
      const rows = await c.query<PaidPayout>(
        `SELECT account_id, amount_minor::text, currency, beneficiary_ref
           FROM payout WHERE payout_id = $1`,
        [payoutId],
      );
      return rows.rows[0] ?? null;
    });
    const key = payoutLockKey(payout?.account_id ?? 'acct-of-no-payout');
    const headers: Record<string, string> = {
      [GRANT_PROOF_HEADER]: testGrantProof({ key, token: req.token, owner: req.owner }),
    };
    const receipt = payout === null ? null : receiptFor(payoutId, m[2], payout, req);
    if (receipt !== null) headers[RAIL_RECEIPT_HEADER] = receipt;
    return headers;
  };
}

/** The receipt a rail-outcome, post or resolve body asks for, of this payout; null for the rest. */
function receiptFor(
  payoutId: string,
  action: string,
  payout: PaidPayout,
  req: GuardedRequest,
): string | null {
  const body = (req.body ?? {}) as Record<string, unknown>;
  const text = (k: string) => (typeof body[k] === 'string' ? body[k] : null);
  const out =
    action === 'post'
      ? 'ACKED'
      : action === 'resolve'
        ? text('resolution')
        : action === 'rail-outcome'
          ? text('outcome')
          : null;
  if (out !== 'ACKED' && out !== 'REJECTED' && out !== 'NOT_FOUND') return null;
  const submissionId = text('submissionId');
  let token: bigint;
  try {
    token = parseFencingToken(req.token);
  } catch {
    return null;
  }
  const submission: ReceiptSubject | null =
    submissionId === null
      ? null
      : {
          payoutId,
          submissionId,
          accountId: payout.account_id,
          amountMinor: Number(payout.amount_minor),
          currency: payout.currency,
          beneficiaryRef: payout.beneficiary_ref,
          presentedToken: token,
          ownerId: req.owner,
        };
  return testRailReceipt(payoutId, submission, { out, ref: text('railReference') });
}

const INSTRUCTED_BODY_MAX_BYTES = 2048;

/** rail-proxy: a submission proves its account's lock and carries the instruction of its body. */
export const railProxyProofs: ProofSource = (req) => {
  const body = req.body as Partial<SubmitRequest> | undefined;
  if (req.url.pathname !== '/v1/rail/submissions' || typeof body?.accountId !== 'string') {
    return Promise.resolve({});
  }
  const headers: Record<string, string> = {
    [GRANT_PROOF_HEADER]: testGrantProof({
      key: payoutLockKey(body.accountId),
      token: req.token,
      owner: req.owner,
    }),
  };
  // A body too big to be a payout (a bad-input test) gets no instruction: it is refused for its size.
  const complete =
    JSON.stringify(body).length <= INSTRUCTED_BODY_MAX_BYTES &&
    typeof body.payoutId === 'string' &&
    typeof body.amountMinor === 'number' &&
    typeof body.currency === 'string' &&
    typeof body.beneficiaryRef === 'string';
  if (complete)
    headers[PAYOUT_INSTRUCTION_HEADER] = testInstruction(
      body as SubmitRequest,
      req.token,
      req.owner,
    );
  return Promise.resolve(headers);
};
