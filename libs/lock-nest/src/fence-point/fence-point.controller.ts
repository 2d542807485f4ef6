import {
  applyDecorators,
  Body,
  Controller,
  Headers,
  HttpCode,
  Post,
  type Type,
} from '@nestjs/common';
import { ValidationError, type ValidationFailure } from '@dlock/lock-api';
import { FencePointService, type FloorRaised, type PresentedNotice } from './fence-point.service';

export const FENCE_POINT_PATH = 'v1/revocation-notices';

/** The generic answer of `POST /v1/revocation-notices` (docs/contract.md, "Fence points"). */
export interface FencePointAnswer {
  key: string;
  floor: string;
  result: FloorRaised['result'];
  before: string | null;
  after: string | null;
}

const PRINTABLE = /^[\x20-\x7e]{1,64}$/;
const REASON_MIN_LENGTH = 8;
const REASON_MAX_LENGTH = 1024;

/**
 * The body `{ notice, reason? }` and the optional X-Operator header, checked
 * together so one 400 names every bad field. A missing notice is left to the
 * notice check: a refused proof (403 PROOF_REJECTED, `missing`), not a 400.
 */
export function parsePresentedNotice(body: unknown, operator: unknown): PresentedNotice {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const fields: ValidationFailure[] = [];
  if (b.notice !== undefined && typeof b.notice !== 'string') {
    fields.push({ field: 'notice', message: 'must be a string (a compact JWS)' });
  }
  const reason = b.reason;
  if (
    reason !== undefined &&
    (typeof reason !== 'string' ||
      reason.length < REASON_MIN_LENGTH ||
      reason.length > REASON_MAX_LENGTH)
  ) {
    fields.push({ field: 'reason', message: 'must be a string of 8..1024 characters' });
  }
  if (operator !== undefined && (typeof operator !== 'string' || !PRINTABLE.test(operator))) {
    fields.push({ field: 'X-Operator', message: 'must be 1..64 printable characters' });
  }
  if (fields.length > 0) throw new ValidationError(fields);
  return {
    notice: b.notice as string | undefined,
    operator: (operator as string | undefined) ?? null,
    reason: (reason as string | undefined) ?? null,
  };
}

export function fencePointAnswer(raised: FloorRaised): FencePointAnswer {
  return {
    key: raised.key,
    floor: raised.floor.toString(),
    result: raised.result,
    before: raised.before === null ? null : raised.before.toString(),
    after: raised.after === null ? null : raised.after.toString(),
  };
}

/**
 * The fence point's route, made per module so an app's own decorators (its
 * authorisation, its OpenAPI description) go on it without touching a class
 * another app shares. The body is read as `unknown` and parsed here, so no
 * validation library is needed.
 */
export function fencePointController(
  path: string,
  decorators: readonly MethodDecorator[],
): Type<unknown> {
  @Controller()
  class FencePointController {
    constructor(private readonly service: FencePointService) {}

    @Post(path)
    @HttpCode(200)
    @applyDecorators(...decorators)
    async present(
      @Body() body: unknown,
      @Headers('x-operator') operator: unknown,
    ): Promise<FencePointAnswer> {
      return fencePointAnswer(await this.service.raise(parsePresentedNotice(body, operator)));
    }
  }
  return FencePointController;
}
