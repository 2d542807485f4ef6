import { Module } from '@nestjs/common';
import { DetectiveModule } from '../detective/detective.module';
import { FencingModule } from '../fencing/fencing.module';
import { ResolutionModule } from '../resolution/resolution.module';
import { ReportController } from './http/report.controller';
import { ReconcilerLoops } from './service/reconciler.loop';

/** Each feature's pass on its own schedule, and the report of the last ones. */
@Module({
  imports: [DetectiveModule, FencingModule, ResolutionModule],
  controllers: [ReportController],
  providers: [ReconcilerLoops],
})
export class PassesModule {}
