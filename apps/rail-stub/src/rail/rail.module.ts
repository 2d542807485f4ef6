import { Module } from '@nestjs/common';
import { AdminController } from './http/admin.controller';
import { RailController } from './http/rail.controller';
import { RailStubService } from './service/rail.service';

/** The rail simulator: submissions and look-ups, and the admin knobs the harness turns. */
@Module({
  controllers: [RailController, AdminController],
  providers: [RailStubService],
})
export class RailModule {}
