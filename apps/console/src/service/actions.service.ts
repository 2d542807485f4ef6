import { Inject, Injectable, Logger } from '@nestjs/common';
import { fileTokenProvider } from '@dlock/identity';
import { LockClient } from '@dlock/lock-client';
import {
  payoutLockKey,
  type AbandonResponse,
  type ResolveRequest,
  type TransitionResult,
} from '@dlock/payout-contract';
import { ConsolePeers } from '../clients/console-peers';
import { CONSOLE_CONFIG, type ConsoleConfig } from '../config';

/** The lock-server's L8 answer, as it comes. */
export interface RevokeAnswer {
  revokedToken: string;
  newTokenFloor: string;
  revocationId: string;
}

/**
 * The break-glass actions, each one call to the service that owns the rule
 * (docs/operations.md). The console checks nothing the service checks: a
 * refusal is the service's own error, passed on to the page as it came.
 */
@Injectable()
export class ActionsService {
  private readonly logger = new Logger('actions');
  private readonly locks: LockClient;

  constructor(
    @Inject(CONSOLE_CONFIG) config: ConsoleConfig,
    private readonly peers: ConsolePeers,
  ) {
    const dir = config.AUTH_TOKEN_DIR;
    this.locks = new LockClient({
      baseUrl: config.LOCK_SERVER_URL,
      ownerId: peers.operator,
      token: fileTokenProvider(dir, 'lock-server'),
    });
  }

  /** L8, and the key it was for (the lock-server's answer does not repeat it). */
  async revoke(
    key: string,
    reason: string,
    expectedToken?: string,
  ): Promise<RevokeAnswer & { key: string }> {
    const body = {
      operator: this.peers.operator,
      reason,
      ...(expectedToken === undefined ? {} : { expectedToken }),
    };
    const answer = await this.peers.post<RevokeAnswer>(
      'lock-server',
      `/v1/locks/${encodeURIComponent(key)}/revoke`,
      body,
    );
    this.logger.log(
      { event: 'console_revoke', key, operator: this.peers.operator },
      'lock revoked',
    );
    return { key, ...answer };
  }

  abandon(payoutId: string, reason: string): Promise<AbandonResponse> {
    return this.peers.post<AbandonResponse>(
      'payment-resource',
      `/v1/payouts/${encodeURIComponent(payoutId)}/abandon`,
      { operator: this.peers.operator, reason },
    );
  }

  /**
   * P8 as every writer does it: the account's lock, its token passed
   * explicitly, released in finally (docs/operations.md). An ACKED verdict
   * leaves the posting to the next executor, which picks up RAIL_ACKED.
   */
  async resolve(payoutId: string, verdict: ResolveRequest): Promise<TransitionResult> {
    const signal = AbortSignal.timeout(this.peers.budget.readTimeoutMs * 4);
    const payout = await this.peers.payments.get(payoutId, signal);
    const session = await this.locks.openSession({ signal });
    try {
      const handle = await session.acquire(payoutLockKey(payout.accountId), { signal });
      try {
        handle.checkStillHeld();
        return await this.peers.payments.resolve(
          payoutId,
          handle.fence,
          verdict,
          handle.signal,
        );
      } finally {
        await handle.release();
      }
    } finally {
      await session.close();
    }
  }
}
