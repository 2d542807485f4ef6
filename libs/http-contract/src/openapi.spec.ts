import { Controller, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ApiOkResponse } from '@nestjs/swagger';
import { ApiContractErrors, buildOpenApiDocument } from './openapi';

@Controller('v1/things')
class ThingsController {
  @ApiOkResponse({ description: 'Done' })
  @ApiContractErrors('FENCED_OUT', 'LOCK_LOST', 'INVALID_TOKEN', ['VALIDATION_FAILED', 422])
  @Post()
  write(): void {}
}

@Module({ controllers: [ThingsController] })
class ThingsModule {}

const envelope = (codes: string[]) => ({
  description: codes.join(', '),
  content: {
    'application/json': {
      schema: {
        allOf: [
          { $ref: '#/components/schemas/ErrorEnvelope' },
          { type: 'object', properties: { code: { enum: codes } } },
        ],
      },
    },
  },
});

async function responsesOf(authenticated: boolean) {
  const app = await NestFactory.create(ThingsModule, { preview: true, logger: false });
  try {
    const doc = buildOpenApiDocument(app, { name: 'things', authenticated });
    return doc.paths['/v1/things'].post!.responses;
  } finally {
    await app.close();
  }
}

/** A route's declared codes, grouped by status and merged with what every route shares. */
describe('ApiContractErrors', () => {
  it('groups codes by their status and adds the shared ones of an authenticated service', async () => {
    expect(await responsesOf(true)).toEqual({
      '200': { description: 'Done' },
      '400': envelope(['INVALID_TOKEN', 'VALIDATION_FAILED']),
      '401': envelope(['UNAUTHENTICATED']),
      '403': envelope(['FORBIDDEN']),
      '409': envelope(['FENCED_OUT', 'LOCK_LOST']),
      '422': envelope(['VALIDATION_FAILED']),
      '500': envelope(['INTERNAL']),
      '503': envelope(['UNAVAILABLE']),
    });
  });

  it('an open service (the rail stub) shares no identity or availability codes', async () => {
    expect(Object.keys(await responsesOf(false)).sort()).toEqual([
      '200',
      '400',
      '409',
      '422',
      '500',
    ]);
  });
});
