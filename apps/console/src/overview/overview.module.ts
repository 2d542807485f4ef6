import { Module } from '@nestjs/common';
import { ActionsModule } from '../actions/actions.module';
import { SessionsModule } from '../sessions/sessions.module';
import { OverviewController } from './http/overview.controller';
import { OverviewService } from './service/overview.service';

/** Every panel's data in one read; it lists the revokes waiting in the actions feature. */
@Module({
  imports: [ActionsModule, SessionsModule],
  controllers: [OverviewController],
  providers: [OverviewService],
})
export class OverviewModule {}
