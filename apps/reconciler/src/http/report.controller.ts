import { Controller, Get } from '@nestjs/common';
import { formatInstant } from '@dlock/lock-api';
import { DetectiveService } from '../detective/detective.service';
import { RailSweepService } from '../detective/rail-sweep.service';
import { ResolutionService } from '../resolution/resolution.service';
import { Operation } from '@dlock/http-contract';

/** For operators and the harness: the last detective run and the resolution state. Read-only. */
@Controller('v1/reconciler')
export class ReportController {
  constructor(
    private readonly detective: DetectiveService,
    private readonly resolution: ResolutionService,
    private readonly railSweep: RailSweepService,
  ) {}

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
