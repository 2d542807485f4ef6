import { Logger } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, IsUUID, Length } from 'class-validator';
import { counter } from '@dlock/metrics';
import type { Counter } from 'prom-client';
import {
  checkRevocationNotice,
  FENCING_TOKEN_MAX,
  PROOF_BYTES_MAX,
  PROOF_REFUSALS,
  ProofRejectedError,
  REVOCATION_NOTICE_TYPE,
  revocationNoticeClaims,
  ValidationError,
  type RevocationNoticeClaims,
  type ValidationFailure,
} from '@dlock/lock-api';
import { ProofVerifier } from '@dlock/identity';
import { int64Text } from '@dlock/http-contract/schema';
import type { FloorRaiseRequest } from './wire';
import { isAccountId, payoutLockKey } from './payout-protocol';

/**
 * Imported as `@dlock/payout-contract/fence-floor`, by the two apps that serve
 * the route: the package's entry point stays free of Nest's HTTP stack.
 * The operator/reconciler raise of a guard's memory to a floor, shared by the
 * account fence (payment-resource) and the rail high-water mark (rail-proxy):
 * docs/operations.md, "Revocation fencing". One request shape, one parse, one
 * notice check, one audit trail, so the two guards cannot drift apart.
 */
export class FenceFloorBody implements FloorRaiseRequest {
  @ApiProperty(int64Text('the floor the guard’s memory is raised to: the notice’s floor'))
  @IsString()
  floor!: string;

  // Required, but its absence is a refused proof (403 PROOF_REJECTED, reason `missing`), as a
  // missing grant proof is, not a 400: the checker says so.
  @ApiProperty({
    maxLength: PROOF_BYTES_MAX,
    description:
      'The revocation notice the lock-server signed over this floor (docs/security.md, ' +
      '“Revocation notices”); without a genuine one nothing is raised (403 PROOF_REJECTED)',
  })
  @IsOptional()
  @IsString()
  notice?: string;

  @ApiPropertyOptional({ format: 'uuid', description: 'The lock-server revocation behind it' })
  @IsOptional()
  @IsUUID()
  revocationId?: string;

  @ApiPropertyOptional({ minLength: 8, maxLength: 1024 })
  @IsOptional()
  @IsString()
  @Length(8, 1024)
  reason?: string;
}

export interface FloorCommand {
  accountId: string;
  floor: bigint;
  /** The revocation notice as presented: checked by FloorNotices before anything is raised. */
  notice: string | undefined;
  operator: string;
  revocationId: string | null;
  reason: string | null;
}

const PRINTABLE = /^[\x20-\x7e]+$/;
const FLOOR = /^[1-9][0-9]{0,18}$/;

/**
 * The parts every caller must get right, checked together so one 400 names
 * them all: the account id (payout-protocol rule), a canonical int64 floor,
 * and the X-Operator attribution (no identity layer exists yet).
 */
export function parseFloorRequest(
  accountId: string,
  body: FenceFloorBody,
  operator: unknown,
): FloorCommand {
  const fields: ValidationFailure[] = [];
  if (!isAccountId(accountId)) fields.push({ field: 'accountId', message: 'is not an account id' });
  if (!FLOOR.test(body.floor) || BigInt(body.floor) > FENCING_TOKEN_MAX) {
    fields.push({ field: 'floor', message: 'must be a positive int64 as a canonical decimal' });
  }
  if (typeof operator !== 'string' || operator.length > 64 || !PRINTABLE.test(operator)) {
    fields.push({ field: 'X-Operator', message: 'header is required: 1..64 printable characters' });
  }
  if (fields.length > 0) throw new ValidationError(fields);
  return {
    accountId,
    floor: BigInt(body.floor),
    notice: body.notice,
    operator: operator as string,
    revocationId: body.revocationId?.toLowerCase() ?? null,
    reason: body.reason ?? null,
  };
}

/** What a guard reports refused notices to: its SafetyEvents (libs/observability, a layer above). */
export interface NoticeRefusals {
  checksProofs(guard: string, proof: string, reasons: readonly string[]): void;
  proofRejected(
    fields: { guard: string; proof: string; reason: string } & Record<string, unknown>,
  ): void;
}

/**
 * The guards' one question before a floor raise: did the lock-server sign a
 * revocation notice for this account's lock key at exactly this floor
 * (docs/security.md, "Revocation notices")? Checked offline against the
 * lock-server's published keys (GRANT_JWKS). A "no" is PROOF_REJECTED, a
 * `proof_rejected` safety event of `guard` before it is thrown.
 */
export class FloorNotices {
  private readonly verifier: ProofVerifier;

  constructor(
    private readonly guard: string,
    jwks: string,
    private readonly safety: NoticeRefusals,
  ) {
    safety.checksProofs(guard, 'revocation', PROOF_REFUSALS);
    // Each notice is met a few times at most (revoke, reconciler): memory buys nothing.
    this.verifier = new ProofVerifier({
      jwks,
      type: REVOCATION_NOTICE_TYPE,
      kind: 'revocation',
      rememberMs: 0,
    });
  }

  start(): Promise<void> {
    return this.verifier.start();
  }

  /** The notice's claims when it is genuine and describes `cmd`; PROOF_REJECTED otherwise. */
  async check(cmd: FloorCommand): Promise<RevocationNoticeClaims> {
    try {
      const claims = revocationNoticeClaims(await this.verifier.verify(cmd.notice));
      checkRevocationNotice(claims, {
        key: payoutLockKey(cmd.accountId),
        floor: cmd.floor,
        revocationId: cmd.revocationId ?? undefined,
      });
      return claims;
    } catch (err) {
      if (err instanceof ProofRejectedError) this.refused(cmd, err);
      throw err;
    }
  }

  private refused(cmd: FloorCommand, err: ProofRejectedError): void {
    this.safety.proofRejected({
      guard: this.guard,
      proof: err.proof,
      reason: err.reason,
      accountId: cmd.accountId,
      floor: cmd.floor.toString(),
      operator: cmd.operator,
    });
  }
}

const RAISES_METRIC = 'fence_floor_raises_total';

/** `fence_floor_raised` (warn) or `fence_floor_unchanged`, and the counter by result. */
export class FenceFloorAudit {
  private readonly logger: Logger;
  private readonly raises: Counter;

  constructor(guard: string) {
    this.logger = new Logger(guard);
    this.raises = counter({
      name: RAISES_METRIC,
      help: 'Operator/reconciler floor raises of this guard, by whether its value moved',
      labelNames: ['result'],
    });
    for (const result of ['raised', 'unchanged']) this.raises.inc({ result }, 0);
  }

  record(
    cmd: FloorCommand,
    notice: RevocationNoticeClaims,
    raised: boolean,
    values: Record<string, string | null>,
  ): void {
    this.raises.inc({ result: raised ? 'raised' : 'unchanged' });
    const audit = {
      accountId: cmd.accountId,
      floor: cmd.floor.toString(),
      ...values,
      operator: cmd.operator,
      revocationId: notice.rid,
      requestedBy: notice.req,
      approvedBy: notice.apr,
      reason: cmd.reason,
    };
    if (raised)
      this.logger.warn({ event: 'fence_floor_raised', ...audit }, 'guard raised to floor');
    else this.logger.log({ event: 'fence_floor_unchanged', ...audit }, 'guard already past floor');
  }
}
