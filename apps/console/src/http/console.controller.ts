import { Body, Controller, Get, HttpCode, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { DlockError } from '@dlock/lock-api';
import { ActionsService } from '../service/actions.service';
import { EventFeed } from '../service/event-feed';
import { OverviewService, type Overview } from '../service/overview.service';
import { SignedIn } from '../auth/signed-in';
import { SessionStore, type ConsoleSession } from '../auth/sessions';
import { AbandonActionBody, ApproveActionBody, ResolveActionBody, RevokeActionBody } from './dto';

/** Keeps idle proxies from closing the stream; a comment line, ignored by EventSource. */
const SSE_KEEPALIVE_MS = 15_000;

/**
 * The page's JSON and its event stream, for the person signed in (the session
 * gate refuses everything here without a session, and every POST without its
 * anti-CSRF token). Parses and maps; the services hold the rules.
 */
@Controller('api')
export class ConsoleController {
  constructor(
    private readonly overviewService: OverviewService,
    private readonly actions: ActionsService,
    private readonly feed: EventFeed,
    private readonly sessions: SessionStore,
  ) {}

  @Get('overview')
  overview(): Promise<Overview> {
    return this.overviewService.overview();
  }

  /**
   * Server-sent events: first the events kept so far and each service's
   * status, then every new one as the poller reads it, while the session
   * lasts (checked at each keepalive; a signed-out page's stream ends).
   */
  @Get('events')
  events(@SignedIn() session: ConsoleSession, @Req() req: Request, @Res() res: Response): void {
    const send = (kind: 'safety' | 'sources', data: unknown) =>
      res.write(`event: ${kind}\ndata: ${JSON.stringify(data)}\n\n`);
    if (!this.feed.subscribe(send)) {
      throw new DlockError('UNAVAILABLE', 'too many open event streams', {
        httpStatus: 503,
        retryAfterMillis: 5_000,
      });
    }
    res.status(200).set({
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
    });
    res.flushHeaders();
    const snapshot = this.feed.snapshot();
    send('sources', snapshot.sources);
    for (const e of snapshot.events) send('safety', e);
    const stop = () => {
      clearInterval(keepalive);
      this.feed.unsubscribe(send);
    };
    const keepalive = setInterval(() => {
      if (this.sessions.get(session.id) !== undefined) return void res.write(': keepalive\n\n');
      stop();
      res.end();
    }, SSE_KEEPALIVE_MS);
    req.on('close', stop);
  }

  @Post('actions/revoke')
  @HttpCode(200)
  revoke(@SignedIn() actor: ConsoleSession, @Body() body: RevokeActionBody) {
    return this.actions.revoke(actor, body.key, body.reason, body.expectedToken);
  }

  @Post('actions/approve')
  @HttpCode(200)
  approve(@SignedIn() actor: ConsoleSession, @Body() body: ApproveActionBody) {
    return this.actions.approve(actor, body.requestId);
  }

  @Post('actions/abandon')
  @HttpCode(200)
  abandon(@SignedIn() actor: ConsoleSession, @Body() body: AbandonActionBody) {
    return this.actions.abandon(actor, body.payoutId, body.reason);
  }

  @Post('actions/resolve')
  @HttpCode(200)
  resolve(@SignedIn() actor: ConsoleSession, @Body() body: ResolveActionBody) {
    const { payoutId, ...verdict } = body;
    return this.actions.resolve(actor, payoutId, verdict);
  }
}
