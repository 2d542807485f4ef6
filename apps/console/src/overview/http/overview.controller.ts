import { Controller, Get } from '@nestjs/common';
import { SignedIn } from '../../sessions/http/signed-in.decorator';
import type { ConsoleSession } from '../../sessions/service/session-store.service';
import { OverviewService, type Overview } from '../service/overview.service';

/**
 * Every panel of the page in one answer, what the person signed in may see
 * of it (the session gate refuses it without a session).
 */
@Controller('api')
export class OverviewController {
  constructor(private readonly overviewService: OverviewService) {}

  @Get('overview')
  overview(@SignedIn() session: ConsoleSession): Promise<Overview> {
    return this.overviewService.overview(session.subject);
  }
}
