import { applyDecorators, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import type {
  ReferenceObject,
  SchemaObject,
} from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import type { OperationName } from '@dlock/identity';
import { ApiReadLimitQuery } from './openapi';
import { Operation } from './operation';
import { parseIntQuery, READ_LIMIT } from './read-query';

/**
 * An advisory list read for the operator console: `GET` with only `?limit=`
 * (READ_LIMIT), its answer's schema and its policy operation. The pieces are
 * listed top to bottom as they stood on the method and applied reversed, so
 * the OpenAPI document stays the same (CONTRIBUTING.md, "A route reads as a few lines").
 */
export function AdvisoryListRoute(route: {
  summary: string;
  operation: OperationName;
  description: string;
  schema: SchemaObject | ReferenceObject;
}): MethodDecorator {
  const stacked = [
    ApiOperation({ summary: route.summary }),
    ApiReadLimitQuery(),
    ApiOkResponse({ description: route.description, schema: route.schema }),
    Get(),
    Operation(route.operation),
  ];
  return applyDecorators(...stacked.reverse());
}

/** The `limit` of an advisory list read's query; anything else in it is 400 VALIDATION_FAILED. */
export function readLimit(query: Record<string, unknown>): number {
  return parseIntQuery(query, { limit: READ_LIMIT }).limit;
}
