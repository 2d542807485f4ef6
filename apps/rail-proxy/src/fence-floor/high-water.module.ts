import { Module } from '@nestjs/common';
import { HighWaterListController } from '../high-water-list/high-water-list.controller';
import { HighWaterListRepository } from '../high-water-list/high-water-list.repository';
import { HighWaterFloorController } from './high-water-floor.controller';
import { HighWaterFloorRepository } from './high-water-floor.repository';
import { HighWaterFloorService } from './high-water-floor.service';

/** The durable high-water marks: listed for the console, raised by revocation fencing (docs/rail.md). */
@Module({
  controllers: [HighWaterFloorController, HighWaterListController],
  providers: [HighWaterFloorRepository, HighWaterFloorService, HighWaterListRepository],
})
export class HighWaterModule {}
