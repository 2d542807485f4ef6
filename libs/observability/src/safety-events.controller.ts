import { Controller, Get, Inject, Query } from '@nestjs/common';
import { parseIntQuery, READ_LIMIT } from '@dlock/http-contract';
import type { SafetyEventRecord } from './safety-event-feed';
import { SafetyEvents } from './safety-events';

/** The name the feed answers with (ObservabilityOptions.app). */
export const SAFETY_EVENT_SERVICE = Symbol('SAFETY_EVENT_SERVICE');

/** GET /v1/safety-events 200. */
export interface SafetyEventsResponse {
  service: string;
  events: SafetyEventRecord[];
  /** The last `seq` returned, or the `after` asked for when nothing newer exists. */
  nextAfter: number;
}

const QUERY = {
  after: { min: 0, max: Number.MAX_SAFE_INTEGER, default: 0 },
  limit: READ_LIMIT,
};

/**
 * The process's recent safety events, oldest first after a cursor, for the
 * operator console (docs/operations.md, "Safety event feed"). Read-only;
 * authenticated like every non-health route.
 */
@Controller('v1/safety-events')
export class SafetyEventsController {
  constructor(
    private readonly safety: SafetyEvents,
    @Inject(SAFETY_EVENT_SERVICE) private readonly service: string,
  ) {}

  @Get()
  list(@Query() query: Record<string, unknown>): SafetyEventsResponse {
    const { after, limit } = parseIntQuery(query, QUERY);
    return { service: this.service, ...this.safety.feed.after(after, limit) };
  }
}
