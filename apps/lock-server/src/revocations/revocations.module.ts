import { Module } from '@nestjs/common';
import { RevocationsController } from './http/revocations.controller';
import { LocksModule } from '../locks/locks.module';
import { RevocationRecords } from './service/revocation-records.service';

/**
 * Revocations: the audit log of grants taken from a holder, read by the
 * reconciler (docs/audit.md), and the second operator's approval of a
 * two-person revoke (docs/security.md).
 */
@Module({
  imports: [LocksModule],
  controllers: [RevocationsController],
  providers: [RevocationRecords],
})
export class RevocationsModule {}
