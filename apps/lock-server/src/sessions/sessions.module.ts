import { Module } from '@nestjs/common';
import { SessionService } from './service/session.service';
import { SessionListingController } from '../locks/http/listings.controller';
import { SessionsController } from './http/sessions.controller';
import { LocksModule } from '../locks/locks.module';

/** Sessions: open, heartbeat, close; a session's end releases its locks (docs/lock-server.md). */
@Module({
  imports: [LocksModule],
  controllers: [SessionsController, SessionListingController],
  providers: [SessionService],
  exports: [SessionService],
})
export class SessionsModule {}
