import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { formatInstant } from '@dlock/lock-api';
import { INSTANT, wireSchema } from '@dlock/http-contract';
import { DetectiveService } from '../../detective/service/detective.service';
import { RailSweepService } from '../../detective/service/rail-sweep.service';
import { ResolutionService } from '../../resolution/service/resolution.service';
import { Operation } from '@dlock/http-contract';

const SECTION = (what: string) => ({
  type: 'object' as const,
  additionalProperties: true,
  description: `${what} (docs/reconciler.md)`,
});
const REPORT = wireSchema<ReturnType<ReportController['report']>>('ReconcilerReport', {
  generatedAt: INSTANT,
  detective: SECTION('the detective checks: run count and the last run’s findings'),
  resolution: SECTION('ambiguous-payout resolution: passes and their verdicts'),
  railSweep: SECTION('the sweep of rail transfers without a payout'),
});

/** For operators and the harness: the last detective run and the resolution state. Read-only. */
@ApiTags('reconciler')
@Controller('v1/reconciler')
export class ReportController {
  constructor(
    private readonly detective: DetectiveService,
    private readonly resolution: ResolutionService,
    private readonly railSweep: RailSweepService,
  ) {}

  @ApiOperation({ summary: 'The last detective run and the resolution state (read-only)' })
  @ApiOkResponse({ description: 'The report', schema: REPORT })
  @Get('report')
  @Operation('reconciler.report')
  report() {
    return {
      generatedAt: formatInstant(new Date()),
      detective: this.detective.report(),
      resolution: this.resolution.report(),
      railSweep: this.railSweep.report(),
    };
  }
}
