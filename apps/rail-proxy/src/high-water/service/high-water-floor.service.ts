import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { SafetyEvents } from '@dlock/observability';
import {
  FenceFloorAudit,
  FloorNotices,
  type FloorCommand,
} from '@dlock/payout-contract/fence-floor';
import type { HighWaterFloorResponse } from '@dlock/payout-contract';
import { RAIL_PROXY_CONFIG, type RailProxyConfig } from '../../config';
import { HighWaterFloorRepository } from '../persistence/high-water-floor.repository';

/**
 * Raises an account's high-water mark so a revoked holder's token is refused
 * before any new holder submits (docs/operations.md, "Revocation fencing"),
 * and only to a floor the lock-server signed a revocation notice over
 * (docs/security.md, "Revocation notices"). Every raise is audited with its
 * attribution; every refusal is a safety event.
 */
@Injectable()
export class HighWaterFloorService implements OnModuleInit {
  private readonly audit = new FenceFloorAudit('fence-floor');
  private readonly notices: FloorNotices;

  constructor(
    private readonly repo: HighWaterFloorRepository,
    @Inject(RAIL_PROXY_CONFIG) config: RailProxyConfig,
    safety: SafetyEvents,
  ) {
    this.notices = new FloorNotices('rail-proxy', config.GRANT_JWKS, safety);
  }

  onModuleInit(): Promise<void> {
    return this.notices.start();
  }

  async raise(cmd: FloorCommand): Promise<HighWaterFloorResponse> {
    const notice = await this.notices.check(cmd);
    const out = await this.repo.raise(cmd.accountId, cmd.floor);
    const view: HighWaterFloorResponse = {
      accountId: cmd.accountId,
      floor: cmd.floor.toString(),
      highestTokenBefore: out.highestBefore?.toString() ?? null,
      highestTokenAfter: out.highestAfter.toString(),
      raised: out.raised,
    };
    this.audit.record(cmd, notice, out.raised, {
      highestTokenBefore: view.highestTokenBefore,
      highestTokenAfter: view.highestTokenAfter,
    });
    return view;
  }
}
