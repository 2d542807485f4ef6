import { Injectable } from '@nestjs/common';
import { RevocationLog } from '../../locks/persistence/revocation-log.port';
import type { RevocationEntry } from '../../locks/domain/revocation.types';

/** The L8 audit records the reconciler pages through in floor order (docs/reconciler.md). */
@Injectable()
export class RevocationRecords {
  constructor(private readonly log: RevocationLog) {}

  /** Records whose floor is above `afterFloor`, lowest first, at most `limit`. */
  after(afterFloor: bigint, limit: number): Promise<RevocationEntry[]> {
    return this.log.list(afterFloor, limit);
  }
}
