import { Inject, Injectable } from '@nestjs/common';
import {
  ContentionError,
  DlockError,
  formatFencingToken,
  formatInstant,
  type FencingToken,
  type LockGrant,
  type LockInfo,
  type LockOutcome,
} from '@dlock/lock-api';
import { AuthPolicy } from '@dlock/identity';
import { SafetyEvents } from '@dlock/observability';
import { LOCK_SERVER_CONFIG, type LockServerConfig } from '../../config';
import {
  LockStore,
  SessionRegistry,
  type AcquireRequest,
  type AcquireResult,
} from '../persistence/lock-store.port';
import { GrantProofs } from './grant-proofs.service';
import { FencePoints, type GuardFloors } from '../../revocations/service/fence-points.service';
import { LockMetrics } from '../../lock-server.metrics';
import { OwnerCaps } from '../../sessions/service/owner-caps.service';
import { SessionOwners } from '../../sessions/service/session-owners.service';
import { CallerBudget } from './caller-budget.service';
import { ServerClock } from './server-clock.service';
import { Waiters, type WaiterRefusal } from './waiters.service';

/** A grant and the lock-server's signature over it (docs/security.md, "Signed grants"). */
export interface SignedGrant {
  grant: LockGrant;
  proof: string;
}

/**
 * Who a revoke is on the authority of: the operator who asked and the one who
 * approved (the same subject when the policy lets one operator revoke alone),
 * and the two-person request it came from.
 */
export interface RevokeAuthority {
  requestedBy: string;
  approvedBy: string;
  requestId?: string;
}

/** A revoke's outcome, and (for a key some fence point guards) what each did with its floor. */
export type Revoked = LockOutcome & { guards?: GuardFloors };

export interface AcquireCommand {
  key: string;
  sessionId: string;
  ownerId: string;
  ttlMillis?: number;
  waitMillis?: number;
  /** Aborts a server-side wait when the caller went away. */
  signal?: AbortSignal;
}

/** The lock rules above the backend: waits, the waiter cap, retry hints, audit, metrics. */
@Injectable()
export class LockService {
  readonly waiters: Waiters;
  private readonly metrics: LockMetrics;

  constructor(
    private readonly store: LockStore,
    sessions: SessionRegistry,
    private readonly safety: SafetyEvents,
    private readonly proofs: GrantProofs,
    private readonly owners: SessionOwners,
    private readonly policy: AuthPolicy,
    private readonly floors: FencePoints,
    private readonly budget: CallerBudget,
    private readonly caps: OwnerCaps,
    @Inject(LOCK_SERVER_CONFIG) private readonly config: LockServerConfig,
    private readonly clock: ServerClock,
  ) {
    this.waiters = new Waiters({
      perKeyMax: config.LOCK_WAITERS_MAX,
      perOwnerMax: config.LOCK_WAITERS_PER_OWNER_MAX,
      totalMax: config.LOCK_WAITERS_TOTAL_MAX,
    });
    this.metrics = new LockMetrics({
      activity: store.activity ? () => store.activity!() : undefined,
      sessionsByState: sessions.countByState ? () => sessions.countByState!() : undefined,
      waiting: () => this.waiters.all(),
    });
  }

  get lockMetrics(): LockMetrics {
    return this.metrics;
  }

  /**
   * L4: one attempt, then (if waitMillis > 0) a bounded wait for the key to
   * free up; only on the caller's own session (docs/security.md).
   */
  acquire(command: AcquireCommand): Promise<SignedGrant> {
    return this.metrics.observe('acquire', async () => {
      await this.owners.check(command.sessionId, command.ownerId);
      const grant = await this.acquireWithin(command);
      this.caps.granted(command.ownerId);
      return this.signed(grant);
    });
  }

  private signed(grant: LockGrant): SignedGrant {
    return { grant, proof: this.proofs.sign(grant) };
  }

  private async acquireWithin(command: AcquireCommand): Promise<LockGrant> {
    const request = {
      key: command.key,
      sessionId: command.sessionId,
      ownerId: command.ownerId,
      ttlMillis: command.ttlMillis ?? this.config.LOCK_DEFAULT_TTL_MS,
    };
    const waitMillis = command.waitMillis ?? 0;
    if (waitMillis <= 0) {
      await this.caps.checkAcquire(command.ownerId);
      const result = await this.store.acquire(request);
      if (result.kind === 'granted') return result.grant;
      throw this.contended(result);
    }
    // The place is taken before the first attempt: a burst of waiting acquires
    // past a cap is refused before it reaches the backend (docs/lock-server.md, "Limits").
    const refusal = this.waiters.tryEnter(command.key, command.ownerId);
    if (refusal !== undefined) throw this.tooManyWaiters(refusal);
    try {
      await this.caps.checkAcquire(command.ownerId);
      return await this.waitFor(request, waitMillis, command.signal);
    } finally {
      this.waiters.leave(command.key, command.ownerId);
    }
  }

  /** Attempts until granted, or until `waitMillis` pass or the caller leaves (then contended). */
  private async waitFor(
    request: AcquireRequest,
    waitMillis: number,
    signal: AbortSignal | undefined,
  ): Promise<LockGrant> {
    const deadline = this.clock.monotonicMs() + waitMillis;
    let result = await this.store.acquire(request);
    for (;;) {
      if (result.kind === 'granted') return result.grant;
      const remainingMs = deadline - this.clock.monotonicMs();
      if (remainingMs <= 0 || signal?.aborted) throw this.contended(result);
      await this.pause(request.key, Math.min(remainingMs, this.config.LOCK_WAIT_POLL_MS), signal);
      // Each re-try is a request made for the caller: waiting draws on its budget.
      await this.budget.charge(request.ownerId);
      result = await this.store.acquire(request);
    }
  }

  private tooManyWaiters(refusal: WaiterRefusal): ContentionError {
    const { perKeyMax, perOwnerMax, totalMax } = this.waiters.limits;
    const [what, max] = {
      'waiters-per-key': ['for this key', perKeyMax],
      'waiters-per-owner': ['for this identity', perOwnerMax],
      'waiters-total': ['in this lock-server', totalMax],
    }[refusal] as [string, number];
    return new ContentionError(`too many acquires already waiting ${what} (max ${max})`, {
      retryAfterMillis: this.config.LOCK_CONTENTION_RETRY_AFTER_MS,
      details: { reason: refusal, waitersMax: max },
    });
  }

  /** Until the key is released through this process, `ms` pass, or the caller leaves. */
  private async pause(key: string, ms: number, caller?: AbortSignal): Promise<void> {
    const controller = new AbortController();
    const timer = this.clock.setTimer(() => controller.abort(), ms);
    const onCallerAbort = () => controller.abort();
    caller?.addEventListener('abort', onCallerAbort, { once: true });
    try {
      await this.store.waitForRelease(key, controller.signal);
    } finally {
      timer.cancel();
      caller?.removeEventListener('abort', onCallerAbort);
      controller.abort();
    }
  }

  private contended(result: Extract<AcquireResult, { kind: 'contended' }>): DlockError {
    // A hint only: the holder's remaining lease, capped (the holder usually renews).
    const untilExpiryMs = result.expiresAt.getTime() - this.clock.wallMs();
    const retryAfterMillis = Math.max(
      1,
      Math.min(this.config.LOCK_CONTENDED_RETRY_AFTER_MAX_MS, Math.ceil(untilExpiryMs)),
    );
    return new DlockError('LOCK_CONTENDED', 'the lock is held by another owner', {
      retryAfterMillis,
      details: {
        holderOwnerId: result.holderOwnerId,
        expiresAt: formatInstant(result.expiresAt),
      },
    });
  }

  /** L5, on the caller's own session; the proof is the acquire's (same claims). */
  renew(
    caller: string,
    key: string,
    sessionId: string,
    token: FencingToken,
    ttlMillis?: number,
  ): Promise<SignedGrant> {
    return this.metrics.observe('renew', async () => {
      await this.owners.check(sessionId, caller);
      return this.signed(await this.store.renew(key, sessionId, token, ttlMillis));
    });
  }

  /**
   * L6: the compare-and-delete on (key, token), by the grant's owner only: the
   * caller proves it with the grant's proof (docs/security.md), so a worker
   * that learned another's token cannot free its lock.
   */
  release(
    caller: string,
    key: string,
    token: FencingToken,
    proof: string | string[] | undefined,
  ): Promise<void> {
    return this.metrics.observe('release', async () => {
      const claims = await this.proofs.check(proof, { token, owner: caller, key });
      await this.store.release(key, token, claims.sid);
      this.caps.released(caller);
    });
  }

  /**
   * L7 (advisory, FR-07). The live grant's token is shown only to its holder
   * and to identities the policy lets read grants (docs/security.md).
   */
  inspect(key: string, caller: string): Promise<LockInfo> {
    return this.metrics.observe('inspect', async () => {
      const { seen, holder } = await this.store.inspect(key);
      const waiterCount = this.waiters.count(key);
      if (!seen && waiterCount === 0) {
        throw new DlockError('NOT_FOUND', 'this key has never been acquired');
      }
      if (!holder) return { key, held: false, waiterCount };
      return {
        key,
        held: true,
        ownerId: holder.ownerId,
        fencingToken: this.mayReadGrant(caller, holder.ownerId) ? holder.fencingToken : undefined,
        acquiredAt: holder.acquiredAt,
        expiresAt: holder.expiresAt,
        waiterCount,
      };
    });
  }

  /** A grant's token and session id are its holder's, and readable by `locks.read-grants`. */
  mayReadGrant(caller: string, holder: string): boolean {
    return caller === holder || this.policy.decide(caller, 'locks.read-grants').allowed;
  }

  /**
   * L8: audited force-revoke; the token floor moves above the revoked token,
   * and every fence point of the key's prefix is raised to it before the answer.
   */
  revoke(
    command: {
      key: string;
      operator: string;
      reason: string;
      expectedToken?: FencingToken;
    },
    /** Who authorised it: the event's attribution and the revocation notice's. */
    authorisedBy: RevokeAuthority,
  ): Promise<Revoked> {
    return this.metrics.observe('revoke', async () => {
      const outcome = await this.store.revoke(command);
      const notice = this.proofs.notice({
        key: command.key,
        floor: outcome.newTokenFloor,
        revocationId: outcome.revocationId,
        requestedBy: authorisedBy.requestedBy,
        approvedBy: authorisedBy.approvedBy,
      });
      const guards = await this.floors.raise(command.key, outcome, notice, command.operator);
      this.safety.lockRevoked({
        key: command.key,
        operator: command.operator,
        reason: command.reason,
        ...authorisedBy,
        revokedToken: formatFencingToken(outcome.revokedToken),
        newTokenFloor: formatFencingToken(outcome.newTokenFloor),
        revocationId: outcome.revocationId,
        ...(guards === undefined ? {} : { guards }),
      });
      return guards === undefined ? outcome : { ...outcome, guards };
    });
  }
}
