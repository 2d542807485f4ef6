import { Module } from '@nestjs/common';
import { HighWaterListController } from './http/high-water-list.controller';
import { HighWaterListRepository } from './persistence/high-water-list.repository';
import { HighWaterFloorController } from './http/high-water-floor.controller';
import { HighWaterFloorRepository } from './persistence/high-water-floor.repository';
import { HighWaterFloorService } from './service/high-water-floor.service';
import { HighWaterListService } from './service/high-water-list.service';

/** The durable high-water marks: listed for the console, raised by revocation fencing (docs/rail.md). */
@Module({
  controllers: [HighWaterFloorController, HighWaterListController],
  providers: [
    HighWaterFloorRepository,
    HighWaterFloorService,
    HighWaterListRepository,
    HighWaterListService,
  ],
})
export class HighWaterModule {}
