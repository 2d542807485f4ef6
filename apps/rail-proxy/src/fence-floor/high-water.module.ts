import { Module } from '@nestjs/common';
import { HighWaterFloorController } from './high-water-floor.controller';
import { HighWaterFloorRepository } from './high-water-floor.repository';
import { HighWaterFloorService } from './high-water-floor.service';

/** The durable high-water marks, raised by revocation fencing (docs/rail.md). */
@Module({
  controllers: [HighWaterFloorController],
  providers: [HighWaterFloorRepository, HighWaterFloorService],
})
export class HighWaterModule {}
