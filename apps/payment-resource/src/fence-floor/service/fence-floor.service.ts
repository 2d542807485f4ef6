import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { DlockError } from '@dlock/lock-api';
import { SafetyEvents } from '@dlock/observability';
import {
  FenceFloorAudit,
  FloorNotices,
  type FloorCommand,
} from '@dlock/payout-contract/fence-floor';
import type { AccountFloorResponse } from '@dlock/payout-contract';
import { PAYMENT_CONFIG, type PaymentConfig } from '../../config';
import { FenceFloorRepository } from '../persistence/fence-floor.repository';

/**
 * Raises an account's fence to a floor so that a revoked holder is fenced out
 * at once, before any new holder writes (docs/operations.md, "Revocation
 * fencing"), and only to a floor the lock-server signed a revocation notice
 * over (docs/security.md, "Revocation notices"). Every raise is audited with
 * its attribution; every refusal is a safety event.
 */
@Injectable()
export class FenceFloorService implements OnModuleInit {
  private readonly audit = new FenceFloorAudit('fence-floor');
  private readonly notices: FloorNotices;

  constructor(
    private readonly dataSource: DataSource,
    private readonly repo: FenceFloorRepository,
    @Inject(PAYMENT_CONFIG) config: PaymentConfig,
    safety: SafetyEvents,
  ) {
    this.notices = new FloorNotices('payment-resource', config.GRANT_JWKS, safety);
  }

  onModuleInit(): Promise<void> {
    return this.notices.start();
  }

  async raise(cmd: FloorCommand): Promise<AccountFloorResponse> {
    const notice = await this.notices.check(cmd);
    const out = await this.repo.raise(this.dataSource.manager, cmd.accountId, cmd.floor);
    if (out === null) {
      throw new DlockError('NOT_FOUND', 'no such account', {
        details: { accountId: cmd.accountId },
      });
    }
    const view: AccountFloorResponse = {
      accountId: cmd.accountId,
      floor: cmd.floor.toString(),
      fenceBefore: out.fenceBefore.toString(),
      fenceAfter: out.fenceAfter.toString(),
      raised: out.raised,
    };
    this.audit.record(cmd, notice, out.raised, {
      fenceBefore: view.fenceBefore,
      fenceAfter: view.fenceAfter,
    });
    return view;
  }
}
