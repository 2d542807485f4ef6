import { Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { INSTANT, wireSchema } from '@dlock/http-contract';
import { FAILURE_MODES, SCRIPTED_FATES } from '../domain/fault-plan.rules';
import { FaultsPatch } from './rail.dto';
import { RailStubService, type StubStats } from '../service/rail.service';

const COUNT = { type: 'integer', minimum: 0 } as const;
const RATE = { type: 'number', minimum: 0, maximum: 1 } as const;
const FAULTS = wireSchema<ReturnType<RailStubService['faults']>>('RailFaults', {
  latencyMs: COUNT,
  failureRate: RATE,
  failureMode: { type: 'string', enum: [...FAILURE_MODES] },
  failureAcceptRate: RATE,
  holdMs: COUNT,
  declineRate: RATE,
  duplicateAckRate: RATE,
  slowRate: RATE,
  slowLatencyMs: COUNT,
  seed: COUNT,
  script: { type: 'array', items: { type: 'string', enum: [...SCRIPTED_FATES] } },
});
const STATS = wireSchema<StubStats>('RailStats', {
  submitsReceived: COUNT,
  transfersAccepted: COUNT,
  acked: COUNT,
  declined: COUNT,
  malformedAcks: COUNT,
  duplicateAcks: COUNT,
  failures: {
    type: 'object',
    properties: { error: COUNT, reset: COUNT, hold: COUNT },
    required: ['error', 'reset', 'hold'],
  },
  failuresAccepted: COUNT,
  rejected: COUNT,
  rejectsAccepted: COUNT,
  slowCalls: COUNT,
  journalTransfers: COUNT,
  startedAt: INSTANT,
});

/** Runtime control for the harness and the tests: fault knobs and counters. */
@ApiTags('admin')
@Controller('admin')
export class AdminController {
  constructor(private readonly rail: RailStubService) {}

  @ApiOperation({ summary: 'The fault settings now in force' })
  @ApiOkResponse({ description: 'Settings', schema: FAULTS })
  @Get('faults')
  faults() {
    return this.rail.faults();
  }

  @ApiOperation({ summary: 'Change fault settings (what is sent replaces the current value)' })
  @ApiOkResponse({ description: 'The settings now in force', schema: FAULTS })
  @Post('faults')
  @HttpCode(200)
  update(@Body() patch: FaultsPatch) {
    return this.rail.updateFaults(patch);
  }

  @ApiOperation({ summary: 'Counters of what the rail did' })
  @ApiOkResponse({ description: 'Counters', schema: STATS })
  @Get('stats')
  stats() {
    return this.rail.statsSnapshot();
  }
}
