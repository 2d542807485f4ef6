import { Injectable, Logger } from '@nestjs/common';
import { DlockError, formatInstant, type FencingToken, type LockOutcome } from '@dlock/lock-api';
import { AuthPolicy, ForbiddenError } from '@dlock/identity';
import {
  RevocationRequests,
  type RevocationRequest,
} from '../../locks/persistence/revocation-requests.port';
import { LockService } from '../../locks/service/lock.service';

export interface RevokeCommand {
  key: string;
  /** As the body names it: a note when it is not the caller, never the actor. */
  operator: string;
  reason: string;
  expectedToken?: FencingToken;
}

/** The longest reason a revocation records (the body's own limit). */
const RECORDED_REASON_MAX_LENGTH = 1024;

/**
 * The audit records the authenticated caller as the one who revoked
 * (docs/security.md); a body `operator` naming someone else is kept only as
 * a note in the reason.
 */
function asActor(command: RevokeCommand, caller: string): RevokeCommand {
  if (command.operator === caller) return command;
  const reason = `${command.reason} [noted operator: ${command.operator}]`;
  return { ...command, operator: caller, reason: reason.slice(0, RECORDED_REASON_MAX_LENGTH) };
}

/** What POST /v1/locks/{key}/revoke did: revoked now, or asked for a second operator. */
export type RevokeResult =
  { kind: 'revoked'; outcome: LockOutcome } | { kind: 'requested'; request: RevocationRequest };

/**
 * Force-revoke under the policy's separation of duties (docs/security.md):
 * with `revoke.approvals: 2` a revoke is a request that takes effect when a
 * different operator approves it inside the window; with 1 it is immediate.
 */
@Injectable()
export class RevokeService {
  private readonly logger = new Logger('revoke');

  constructor(
    private readonly locks: LockService,
    private readonly requests: RevocationRequests,
    private readonly policy: AuthPolicy,
  ) {}

  async revoke(asked: RevokeCommand, caller: string): Promise<RevokeResult> {
    const command = asActor(asked, caller);
    const { approvals, approvalWindowMs } = this.policy.revoke;
    if (approvals === 1) {
      return {
        kind: 'revoked',
        outcome: await this.locks.revoke(command, {
          requestedBy: caller,
          approvedBy: caller,
        }),
      };
    }
    // A request by a team account cannot be told apart from its approver's.
    this.refuseShared(caller, 'ask for');
    // Nothing to ask a second person about: the same 404 the single-step revoke answers.
    if (!(await this.locks.inspect(command.key, caller)).held) {
      throw new DlockError('NOT_FOUND', 'the key is not held');
    }
    const request = await this.requests.create(
      { ...command, requestedBy: caller },
      approvalWindowMs,
    );
    this.logger.warn(
      {
        event: 'revoke_requested',
        requestId: request.requestId,
        key: request.key,
        requestedBy: caller,
        operator: request.operator,
        reason: request.reason,
        expiresAt: formatInstant(request.expiresAt),
      },
      'force-revoke requested; waiting for a second operator',
    );
    return { kind: 'requested', request };
  }

  async approve(requestId: string, approver: string): Promise<LockOutcome> {
    this.refuseShared(approver, 'approve');
    const approved = await this.requests.approve(requestId, approver);
    switch (approved) {
      case 'unknown':
        throw new DlockError('NOT_FOUND', 'no such revocation request');
      case 'self':
        throw new ForbiddenError('a revocation must be approved by a different operator', {
          reason: 'self-approval',
        });
      case 'approved':
        throw new DlockError('REVOCATION_ALREADY_APPROVED', 'the request was already approved');
      case 'expired':
        throw new DlockError(
          'REVOCATION_REQUEST_EXPIRED',
          'the approval window of this request has closed: request the revoke again',
        );
      default:
        break;
    }
    this.logger.warn(
      { event: 'revoke_approved', requestId, key: approved.key, approvedBy: approver },
      'force-revoke approved',
    );
    const { requestId: _id, requestedBy, requestedAt: _at, expiresAt: _exp, ...command } = approved;
    return this.locks.revoke(command, { requestId, requestedBy, approvedBy: approver });
  }

  /**
   * A shared identity (policy `shared: true`) is no person of a two-person
   * revoke: whoever used it may be the other operator (docs/security.md).
   */
  private refuseShared(subject: string, what: string): void {
    if (!this.policy.isShared(subject)) return;
    throw new ForbiddenError(`a shared identity cannot ${what} a two-person revoke`, {
      reason: 'shared-identity',
    });
  }
}
