import { Body, Controller, Get, Post, Query, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ApiOkResponse, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { ApiContractErrors, INSTANT, schemaRef, wireSchema } from '@dlock/http-contract';
import { payoutSchemaRef, type RailLookup } from '@dlock/payout-contract';
import { LookupQuery, SubmitBody } from './rail.dto';
import { REJECT_WORDS, RailStubService, type SubmitReply } from '../service/rail.service';

const JSON_TYPE = 'application/json; charset=utf-8';

type Ack = Extract<SubmitReply, { kind: 'ack' }>['body'];
type Refusal = Extract<SubmitReply, { kind: 'reject' }>['body'];

/** The rail's own answers: not this project's envelope (a bank's API is not ours to design). */
const ACK = wireSchema<Ack>('RailAck', { railReference: { type: 'string' }, acceptedAt: INSTANT });
const REFUSAL = wireSchema<Refusal>('RailRefusal', {
  status: { type: 'string', enum: Object.values(REJECT_WORDS) },
  clientRef: { type: 'string' },
});
const ENVELOPE = schemaRef('ErrorEnvelope');

/** The rail's own surface: no /v1 prefix, no token, no idempotency (docs/contract.md, §3.6). */
@ApiTags('rail')
@Controller()
export class RailController {
  constructor(private readonly rail: RailStubService) {}

  @ApiOperation({
    summary: 'Move money: every call is a new transfer (deliberately not idempotent)',
    description:
      'Injected faults answer 500, reset or hold the connection, or acknowledge with a ' +
      'malformed text/plain body (docs/rail.md).',
  })
  @ApiResponse({
    status: 200,
    description: 'Accepted (or, injected, a malformed text/plain ack)',
    content: {
      'application/json': { schema: ACK },
      'text/plain': { schema: { type: 'string', enum: ['OK'] } },
    },
  })
  @ApiResponse({
    status: 400,
    description: 'A body this project’s validation refuses (envelope), or a scripted refusal',
    content: { 'application/json': { schema: { oneOf: [ENVELOPE, REFUSAL] } } },
  })
  @ApiResponse({ status: 402, description: 'Declined', schema: REFUSAL })
  @ApiResponse({ status: 409, description: 'Scripted refusal', schema: REFUSAL })
  @ApiResponse({ status: 429, description: 'Scripted refusal', schema: REFUSAL })
  @ApiResponse({
    status: 500,
    description: 'Injected rail failure',
    content: {
      'application/json': {
        schema: {
          type: 'object',
          properties: { status: { type: 'string', enum: ['ERROR'] }, message: { type: 'string' } },
        },
      },
    },
  })
  @Post('submit')
  async submit(@Body() body: SubmitBody, @Req() req: Request, @Res() res: Response): Promise<void> {
    const reply = await this.rail.submit(body, req.socket);
    this.write(reply, body, req, res);
  }

  /** S2: read-only lookup by client reference. */
  @ApiOperation({ summary: 'The transfers booked under a client reference (S2)' })
  @ApiOkResponse({ description: 'The rail’s record', schema: payoutSchemaRef('RailLookup') })
  @ApiContractErrors('VALIDATION_FAILED')
  @Get('lookup')
  lookup(@Query() query: LookupQuery): RailLookup {
    return this.rail.lookup(query.clientRef);
  }

  private write(reply: SubmitReply, body: SubmitBody, req: Request, res: Response): void {
    switch (reply.kind) {
      case 'ack':
        res.status(200).type(JSON_TYPE).send(JSON.stringify(reply.body));
        return;
      case 'malformed':
        res.status(200).type('text/plain; charset=utf-8').send('OK');
        return;
      case 'decline':
        res
          .status(402)
          .type(JSON_TYPE)
          .send(JSON.stringify({ status: 'DECLINED', clientRef: body.clientRef }));
        return;
      case 'reject':
        res.status(reply.status).type(JSON_TYPE).send(JSON.stringify(reply.body));
        return;
      case 'error':
        res
          .status(500)
          .type(JSON_TYPE)
          .send(JSON.stringify({ status: 'ERROR', message: 'injected rail failure' }));
        return;
      case 'reset':
        req.socket.resetAndDestroy();
        return;
      case 'gone':
        if (!req.socket.destroyed) req.socket.destroy();
        return;
    }
  }
}
