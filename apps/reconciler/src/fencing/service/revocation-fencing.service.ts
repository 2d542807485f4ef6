import { Inject, Injectable, Logger } from '@nestjs/common';
import { RECONCILER_CONFIG, type ReconcilerConfig } from '../../config';
import { ReconcilerMetrics } from '../../reconciler.metrics';
import { PaymentResourceClient, RailProxyClient, payoutAccountOf } from '@dlock/payout-contract';
import { RevocationsClient, type Revocation } from '../clients/revocations.client';
import { advanceCursor, type Handled } from '../domain/revocation-cursor.rules';

/** Revocations fetched per request to the lock-server. */
const PAGE_LIMIT = 100;

export interface FencingPass {
  seen: number;
  fenced: number;
  pending: number;
  cursor: string;
}

/**
 * Revocation fencing (docs/reconciler.md): every L8 revocation of a payout
 * key `payout:{accountId}` becomes a raise of that account's fence
 * (payment-resource) and high-water mark (rail-proxy) to the revocation's
 * newTokenFloor, presenting the notice the lock-server signed over it (the
 * guards raise on nothing else, docs/security.md "Revocation notices"), so
 * the revoked holder is fenced out at once, not only when a new holder writes. The floor is above the revoked token and the guards
 * admit a token only above their value. A guard that fails keeps the
 * revocation pending: the cursor never passes it, the next pass retries.
 */
@Injectable()
export class RevocationFencingService {
  private readonly logger = new Logger('revocation-fencing');
  private cursor = 0n;
  private lastPass: FencingPass | null = null;

  constructor(
    @Inject(RECONCILER_CONFIG) private readonly config: ReconcilerConfig,
    private readonly revocations: RevocationsClient,
    private readonly payments: PaymentResourceClient,
    private readonly proxy: RailProxyClient,
    private readonly metrics: ReconcilerMetrics,
  ) {}

  report(): FencingPass | null {
    return this.lastPass;
  }

  async runPass(signal: AbortSignal): Promise<FencingPass> {
    const endTimer = this.metrics.passSeconds.startTimer({ loop: 'fencing' });
    try {
      return await this.pass(signal);
    } finally {
      endTimer();
    }
  }

  private async pass(signal: AbortSignal): Promise<FencingPass> {
    const handled: Handled[] = [];
    let after = this.cursor;
    while (handled.length < this.config.RECONCILER_BATCH_MAX && !signal.aborted) {
      const limit = Math.min(PAGE_LIMIT, this.config.RECONCILER_BATCH_MAX - handled.length);
      const page = await this.revocations.list(after, limit, signal);
      for (const r of page) {
        handled.push({
          newTokenFloor: r.newTokenFloor,
          revokedAtMs: r.revokedAt.getTime(),
          done: await this.fence(r, signal),
        });
      }
      if (page.length < limit) break;
      after = page[page.length - 1].newTokenFloor;
    }
    this.cursor = advanceCursor(
      this.cursor,
      handled,
      Date.now(),
      this.config.RECONCILER_REVOCATION_SETTLE_MS,
    );
    const pending = handled.filter((h) => !h.done).length;
    this.metrics.revocationsUnfenced.set(pending);
    this.lastPass = {
      seen: handled.length,
      fenced: handled.length - pending,
      pending,
      cursor: this.cursor.toString(),
    };
    return this.lastPass;
  }

  /** True when both guards hold the floor (or the key guards no payout account). */
  private async fence(r: Revocation, signal: AbortSignal): Promise<boolean> {
    const accountId = payoutAccountOf(r.key);
    if (accountId === null) return true;
    const raise = {
      revocationId: r.revocationId,
      accountId,
      floor: r.newTokenFloor,
      notice: r.notice,
      reason: `lock ${r.key} revoked (token ${r.revokedToken.toString()})`,
    };
    const [account, rail] = await Promise.all([
      this.payments.raiseFenceFloor(raise, signal).then(
        (result) => this.count('account', result),
        (err: unknown) => this.failed('account', r, err),
      ),
      this.proxy.raiseHighWaterFloor(raise, signal).then(
        (result) => this.count('rail', result),
        (err: unknown) => this.failed('rail', r, err),
      ),
    ]);
    const done = account && rail;
    if (done) {
      this.logger.log(
        {
          event: 'revocation_fenced',
          revocationId: r.revocationId,
          accountId,
          revokedToken: r.revokedToken.toString(),
          floor: r.newTokenFloor.toString(),
        },
        'revoked holder fenced at both guards',
      );
    }
    return done;
  }

  private count(guard: 'account' | 'rail', result: string): boolean {
    this.metrics.fenceFloorRaisesTotal.inc({ guard, result });
    return true;
  }

  private failed(guard: 'account' | 'rail', r: Revocation, err: unknown): boolean {
    this.metrics.fenceFloorRaisesTotal.inc({ guard, result: 'error' });
    this.logger.warn(
      {
        event: 'revocation_fencing_failed',
        guard,
        revocationId: r.revocationId,
        key: r.key,
        err: (err as Error).message,
      },
      'guard raise failed; retried next pass',
    );
    return false;
  }
}
