import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { formatFencingToken, type LockOutcome } from '@dlock/lock-api';
import { fileTokenProvider } from '@dlock/identity';
import {
  PaymentResourceClient,
  payoutAccountOf,
  RailProxyClient,
  type RaiseResult,
} from '@dlock/payout-contract';
import { LOCK_SERVER_CONFIG, type LockServerConfig } from '../../config';

/** What each fence point did with a revocation's floor: `failed` is left to the reconciler. */
export type GuardFloor = RaiseResult | 'failed';
export interface GuardFloors {
  'payment-resource': GuardFloor;
  'rail-proxy': GuardFloor;
}

/** The longest a revoke waits for the guards before it answers with what it knows. */
export const FLOOR_RAISE_BUDGET_MS = 2_000;

/**
 * Revocation fencing at revoke time (docs/security.md, "Signed grants"): a
 * revoke of `payout:{accountId}` raises the account's fence and the rail
 * high-water mark to the new token floor before it answers, presenting the
 * revocation notice it signed over that floor (the guards raise on nothing
 * else, docs/security.md "Revocation notices"), so the revoked
 * holder's genuine proof is refused at once, not on the reconciler's next pass.
 * The answer says which guard holds the floor; one that did not answer is
 * raised by the reconciler (docs/reconciler.md). Off when the guards' URLs are
 * not configured.
 */
@Injectable()
export class RevocationFloors implements OnModuleDestroy {
  private readonly logger = new Logger('revocation-floors');
  private readonly guards: { payments: PaymentResourceClient; proxy: RailProxyClient } | undefined;

  constructor(@Inject(LOCK_SERVER_CONFIG) config: LockServerConfig) {
    const { PAYMENT_RESOURCE_URL: pay, RAIL_PROXY_URL: rail, AUTH_TOKEN_DIR: dir } = config;
    if (pay === undefined || rail === undefined || dir === undefined) return;
    const owner = 'lock-server';
    this.guards = {
      payments: new PaymentResourceClient(pay, owner, fileTokenProvider(dir, 'payment-resource')),
      proxy: new RailProxyClient(rail, owner, undefined, fileTokenProvider(dir, 'rail-proxy')),
    };
  }

  /** Both guards at the floor of `outcome`, or what stopped one; undefined when not a payout key or off. */
  async raise(
    key: string,
    outcome: LockOutcome,
    notice: string,
    by: string,
  ): Promise<GuardFloors | undefined> {
    const accountId = payoutAccountOf(key);
    if (accountId === null || this.guards === undefined) return undefined;
    const raise = {
      revocationId: outcome.revocationId,
      accountId,
      floor: outcome.newTokenFloor,
      notice,
      reason: `lock ${key} revoked by ${by} (token ${formatFencingToken(outcome.revokedToken)})`,
    };
    const signal = AbortSignal.timeout(FLOOR_RAISE_BUDGET_MS);
    const [payments, proxy] = await Promise.all([
      this.guards.payments
        .raiseFenceFloor(raise, signal)
        .catch((err) => this.failed('payment-resource', key, err)),
      this.guards.proxy
        .raiseHighWaterFloor(raise, signal)
        .catch((err) => this.failed('rail-proxy', key, err)),
    ]);
    return { 'payment-resource': payments, 'rail-proxy': proxy };
  }

  onModuleDestroy(): void {
    this.guards?.payments.close();
    this.guards?.proxy.close();
  }

  private failed(guard: keyof GuardFloors, key: string, err: unknown): 'failed' {
    this.logger.warn(
      { event: 'revocation_floor_pending', guard, key, err: (err as Error).message },
      'guard not raised at revoke time; the reconciler raises it on its next pass',
    );
    return 'failed';
  }
}
