import { Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import { FaultsPatch } from './dto';
import { RailStubService } from './rail.service';

/** Runtime control for the harness and the tests: fault knobs and counters. */
@Controller('admin')
export class AdminController {
  constructor(private readonly rail: RailStubService) {}

  @Get('faults')
  faults() {
    return this.rail.faults();
  }

  @Post('faults')
  @HttpCode(200)
  update(@Body() patch: FaultsPatch) {
    return this.rail.updateFaults(patch);
  }

  @Get('stats')
  stats() {
    return this.rail.statsSnapshot();
  }
}
