import { applyDecorators, HttpCode, Post } from '@nestjs/common';
import { ApiHeader, ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import {
  ApiContractErrors,
  ApiFencedWriteHeaders,
  Operation,
  schemaRef,
} from '@dlock/http-contract';

/**
 * R1's route: `POST /v1/rail/submissions` under a grant, policy operation `rail.submit`, 200
 * with the rail's acknowledgement, the grant's headers, the payout instruction it must match
 * (docs/rail.md) and every refusal, in that order in the OpenAPI document.
 */
export function FencedRailSubmit(): MethodDecorator {
  // Listed top to bottom as they would be stacked on the method; applied bottom up like a stack.
  const stacked = [
    ApiOperation({ summary: 'Submit a payout to the rail, once, under a grant (R1)' }),
    ApiFencedWriteHeaders(),
    ApiOkResponse({ description: 'The rail acknowledged', schema: schemaRef('SubmitResponse') }),
    ApiContractErrors(
      'FENCED_OUT',
      'DUPLICATE_SUBMISSION',
      'RAIL_AMBIGUOUS',
      'RAIL_UNAVAILABLE',
      'IDEMPOTENCY_CONFLICT',
      'INVALID_TOKEN',
      'PROOF_REJECTED',
      ['VALIDATION_FAILED', 422],
    ),
    ApiHeader({
      name: 'X-Payout-Instruction',
      required: true,
      description:
        'The instruction payment-resource answered RAIL_SUBMITTED with (P6 railInstruction); ' +
        'a submission that differs from it in any field is 403 PROOF_REJECTED (docs/rail.md)',
      schema: { type: 'string' },
    }),
    Post(),
    Operation('rail.submit'),
    HttpCode(200),
  ];
  return applyDecorators(...stacked.reverse());
}
