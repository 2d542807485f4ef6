import { Body, Controller, Get, Post, Query, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { RailLookup } from '@dlock/payout-contract';
import { LookupQuery, SubmitBody } from './dto';
import { RailStubService, type SubmitReply } from './rail.service';

const JSON_TYPE = 'application/json; charset=utf-8';

/** The rail's own surface: no /v1 prefix, no token, no idempotency (C3 §3.1, §3.6). */
@Controller()
export class RailController {
  constructor(private readonly rail: RailStubService) {}

  @Post('submit')
  async submit(@Body() body: SubmitBody, @Req() req: Request, @Res() res: Response): Promise<void> {
    const reply = await this.rail.submit(body, req.socket);
    this.write(reply, body, req, res);
  }

  /** S2: read-only lookup by client reference. */
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
