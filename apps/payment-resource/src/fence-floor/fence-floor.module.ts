import { Module } from '@nestjs/common';
import { PaydbModule } from '../persistence/paydb.module';
import { FenceFloorController } from './http/fence-floor.controller';
import { FenceFloorRepository } from './persistence/fence-floor.repository';
import { FenceFloorService } from './service/fence-floor.service';

/** Revocation fencing: an account's floor raised by the reconciler (docs/operations.md). */
@Module({
  imports: [PaydbModule],
  controllers: [FenceFloorController],
  providers: [FenceFloorRepository, FenceFloorService],
})
export class FenceFloorModule {}
