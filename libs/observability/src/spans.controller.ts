import { BadRequestException, Controller, Get, Query } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { finishedSpans, type SpanRecord } from '@dlock/tracing';

const TRACE_ID = /^[0-9a-f]{32}$/;

/**
 * GET /debug/spans[?traceId=…]: the spans this process finished, served only
 * when OTEL_TRACES_EXPORTER=memory (tests and benches; docs/tracing.md).
 * Left out of the OpenAPI documents: a test aid, absent in production.
 */
@ApiExcludeController()
@Controller('debug/spans')
export class SpansController {
  @Get()
  list(@Query('traceId') traceId?: string): { spans: SpanRecord[] } {
    if (traceId !== undefined && !TRACE_ID.test(traceId)) {
      throw new BadRequestException('traceId must be 32 lowercase hex digits');
    }
    return { spans: finishedSpans(traceId) ?? [] };
  }
}

/** The controllers to mount: the span listing only where spans are kept in memory. */
export function spanControllers(): (typeof SpansController)[] {
  return finishedSpans() === undefined ? [] : [SpansController];
}
