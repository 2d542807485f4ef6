import { Controller, Get, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { DlockError } from '@dlock/lock-api';
import { withoutGrantFields } from '../domain/grant-fields.rules';
import { EventFeed, type FeedEvent } from '../service/event-feed.service';
import { ForbiddenError } from '@dlock/identity';
import { SignedIn } from '../../sessions/http/signed-in.decorator';
import { PersonRights } from '../../sessions/service/person-rights.service';
import { SessionStore, type ConsoleSession } from '../../sessions/service/session-store.service';

/** Keeps idle proxies from closing the stream; a comment line, ignored by EventSource. */
const SSE_KEEPALIVE_MS = 15_000;

/**
 * The page's safety feed, for the person signed in (the session gate refuses
 * it without a session). Streams what the poller hands the feed.
 */
@Controller('api')
export class EventsController {
  constructor(
    private readonly feed: EventFeed,
    private readonly sessions: SessionStore,
    private readonly rights: PersonRights,
  ) {}

  /**
   * Server-sent events: first the events kept so far and each service's
   * status, then every new one as the poller reads it, while the session
   * lasts (checked at each keepalive; a signed-out page's stream ends).
   */
  @Get('events')
  events(@SignedIn() session: ConsoleSession, @Req() req: Request, @Res() res: Response): void {
    if (!this.rights.may(session.subject, 'safety-events.read'))
      throw new ForbiddenError('your roles do not grant safety-events.read', { reason: 'policy' });
    const grants = this.rights.may(session.subject, 'locks.read-grants');
    const send = (kind: 'safety' | 'sources', data: unknown) => {
      const shown =
        kind === 'safety' && !grants
          ? { ...(data as FeedEvent), fields: withoutGrantFields((data as FeedEvent).fields) }
          : data;
      res.write(`event: ${kind}\ndata: ${JSON.stringify(shown)}\n\n`);
    };
    const subscribed = this.feed.subscribe(send, session.subject);
    if (subscribed !== 'subscribed') {
      const whose = subscribed === 'full' ? 'open' : 'of yours open';
      throw new DlockError('UNAVAILABLE', `too many event streams ${whose}`, {
        httpStatus: 503,
        retryAfterMillis: 5_000,
        details: { reason: subscribed === 'full' ? 'streams-full' : 'streams-per-subject' },
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
}
