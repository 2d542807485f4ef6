import { Module } from '@nestjs/common';
import { AuthPolicy, policyFile } from '@dlock/identity';
import { LOCK_SERVER_CONFIG, type LockServerConfig } from '../config';
import { CallerBudget } from './service/caller-budget.service';
import { GrantProofs } from './service/grant-proofs.service';
import { LockService } from './service/lock.service';
import { Listings } from './service/listings.service';
import { FencePoints } from '../revocations/service/fence-points.service';
import { ServerClock, SystemServerClock } from './service/server-clock.service';
import { RevokeService } from '../revocations/service/revoke.service';
import { OwnerCaps } from '../sessions/service/owner-caps.service';
import { SessionOwners } from '../sessions/service/session-owners.service';
import { LockListingController } from './http/listings.controller';
import { LocksController } from './http/locks.controller';

/**
 * Locks: acquire, renew, release, read and force-revoke, each grant with its
 * fencing token (docs/lock-server.md). Revoke reads the same policy the
 * authorisation guard enforces, for its approvals (docs/security.md).
 */
@Module({
  controllers: [LocksController, LockListingController],
  providers: [
    LockService,
    Listings,
    CallerBudget,
    RevokeService,
    GrantProofs,
    SessionOwners,
    OwnerCaps,
    FencePoints,
    { provide: ServerClock, useClass: SystemServerClock },
    {
      provide: AuthPolicy,
      inject: [LOCK_SERVER_CONFIG],
      useFactory: (config: LockServerConfig) => policyFile(config.AUTH_POLICY),
    },
  ],
  exports: [
    LockService,
    Listings,
    RevokeService,
    SessionOwners,
    OwnerCaps,
    GrantProofs,
    ServerClock,
  ],
})
export class LocksModule {}
