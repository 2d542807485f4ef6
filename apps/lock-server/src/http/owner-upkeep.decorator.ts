import { applyDecorators, Delete, HttpCode, Post } from '@nestjs/common';
import { SkipThrottle } from '@nestjs/throttler';
import { ApiNoContentResponse, ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import type { ReferenceObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import type { OperationName } from '@dlock/identity';
import { ApiContractErrors, ApiOwnerIdHeader, Operation } from '@dlock/http-contract';

/**
 * A route by which an owner keeps alive or gives back what it holds: L2 heartbeat, L3 close,
 * L6 release. Never throttled (docs/lock-server.md, "Limits": refusing them would keep locks
 * held longer; `admission.ts` exempts the same three from the in-flight limit). `DELETE path`
 * answers 204, `POST path` 200 with `schema`. The decorators are listed top to bottom as they
 * stood on the method, and applied bottom up like a stack, so the OpenAPI document is the same.
 */
export function OwnerUpkeepRoute(route: {
  summary: string;
  /** The path parameter and the headers that prove the hold, documented before X-Owner-Id. */
  target: readonly MethodDecorator[];
  answer:
    | { delete: string; description: string }
    | { post: string; description: string; schema: ReferenceObject };
  operation: OperationName;
  errors: Parameters<typeof ApiContractErrors>;
}): MethodDecorator {
  const { answer } = route;
  const [response, verb, status] =
    'delete' in answer
      ? [ApiNoContentResponse({ description: answer.description }), Delete(answer.delete), 204]
      : [
          ApiOkResponse({ description: answer.description, schema: answer.schema }),
          Post(answer.post),
          200,
        ];
  const stacked = [
    ApiOperation({ summary: route.summary }),
    ...route.target,
    ApiOwnerIdHeader(),
    response,
    ApiContractErrors(...route.errors),
    verb,
    Operation(route.operation),
    HttpCode(status),
    SkipThrottle(),
  ];
  return applyDecorators(...stacked.reverse());
}
