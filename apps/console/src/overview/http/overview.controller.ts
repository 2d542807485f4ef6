import { Controller, Get } from '@nestjs/common';
import { OverviewService, type Overview } from '../service/overview.service';

/**
 * Every panel of the page in one answer, for the person signed in (the
 * session gate refuses it without a session).
 */
@Controller('api')
export class OverviewController {
  constructor(private readonly overviewService: OverviewService) {}

  @Get('overview')
  overview(): Promise<Overview> {
    return this.overviewService.overview();
  }
}
