import { Module } from '@nestjs/common';
import { LockService } from '../core/lock.service';
import { LockListingController } from '../http/listings.controller';
import { LocksController } from '../http/locks.controller';

/** Locks: acquire, renew, release and read, each grant with its fencing token (docs/lock-server.md). */
@Module({
  controllers: [LocksController, LockListingController],
  providers: [LockService],
  exports: [LockService],
})
export class LocksModule {}
