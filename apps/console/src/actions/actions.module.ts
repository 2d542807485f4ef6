import { Module } from '@nestjs/common';
import { ActionsController } from './http/actions.controller';
import { ActionsService } from './service/actions.service';
import { PendingRevocations } from './service/revocation-requests.service';

/** The break-glass actions, and the two-person revokes waiting here for a second operator. */
@Module({
  controllers: [ActionsController],
  providers: [
    ActionsService,
    { provide: PendingRevocations, useFactory: () => new PendingRevocations() },
  ],
  exports: [PendingRevocations],
})
export class ActionsModule {}
