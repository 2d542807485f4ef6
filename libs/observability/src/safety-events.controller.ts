import { Controller, Get, Inject, Query } from '@nestjs/common';
import {
  ApiReadLimitQuery,
  INSTANT,
  objectSchema,
  Operation,
  parseIntQuery,
  READ_LIMIT,
  wireSchema,
} from '@dlock/http-contract';
import { ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import { SafetyEvents, type SafetyEventRecord } from '@dlock/lock-nest';

/** The name the feed answers with (ObservabilityOptions.app). */
export const SAFETY_EVENT_SERVICE = Symbol('SAFETY_EVENT_SERVICE');

/** GET /v1/safety-events 200. */
export interface SafetyEventsResponse {
  service: string;
  events: SafetyEventRecord[];
  /** The last `seq` returned, or the `after` asked for when nothing newer exists. */
  nextAfter: number;
}

const SAFETY_EVENTS_SCHEMA = wireSchema<SafetyEventsResponse>('SafetyEvents', {
  service: { type: 'string' },
  events: {
    type: 'array',
    items: objectSchema<SafetyEventRecord>(
      {
        seq: { type: 'integer', minimum: 1 },
        at: INSTANT,
        event: { type: 'string', example: 'fenced_out' },
        fields: {
          type: 'object',
          additionalProperties: true,
          description: "the first occurrence's log line fields; tokens as decimal strings",
        },
        count: {
          type: 'integer',
          minimum: 1,
          description: 'a refusal that coalesces: how many times it happened within its window',
        },
        lastAt: { ...INSTANT, description: 'a refusal that coalesces: its latest occurrence' },
      },
      ['count', 'lastAt'],
    ),
  },
  nextAfter: { type: 'integer', minimum: 0 },
});

const QUERY = {
  after: { min: 0, max: Number.MAX_SAFE_INTEGER, default: 0 },
  limit: READ_LIMIT,
};

/**
 * The process's recent safety events, oldest first after a cursor, for the
 * operator console (docs/operations.md, "Safety event feed"). Read-only;
 * authenticated like every non-health route.
 */
@ApiTags('safety-events')
@Controller('v1/safety-events')
export class SafetyEventsController {
  constructor(
    private readonly safety: SafetyEvents,
    @Inject(SAFETY_EVENT_SERVICE) private readonly service: string,
  ) {}

  @ApiOperation({ summary: 'Recent safety events after a cursor, oldest first' })
  @ApiQuery({
    name: 'after',
    required: false,
    schema: { type: 'integer', minimum: 0, default: 0 },
    description: 'the last seq already seen',
  })
  @ApiReadLimitQuery()
  @ApiOkResponse({ description: 'Events', schema: SAFETY_EVENTS_SCHEMA })
  @Get()
  @Operation('safety-events.read')
  list(@Query() query: Record<string, unknown>): SafetyEventsResponse {
    const { after, limit } = parseIntQuery(query, QUERY);
    return { service: this.service, ...this.safety.feed.after(after, limit) };
  }
}
