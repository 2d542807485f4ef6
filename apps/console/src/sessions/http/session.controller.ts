import { Body, Controller, Delete, Get, HttpCode, Logger, Post, Req, Res } from '@nestjs/common';
import type { Response } from 'express';
import {
  ForbiddenError,
  TOKEN_BYTES_MAX,
  UnauthenticatedError,
  type VerifiedIdentity,
} from '@dlock/identity';
import { recordAuthRefusal } from '@dlock/http-contract';
import { ValidationError } from '@dlock/lock-api';
import { IsOptional, IsString, MaxLength } from 'class-validator';
import { ConsolePeers } from '../../console-peers.client';
import { PersonRights } from '../service/person-rights.service';
import { PersonVerifier } from '../service/person-verifier.service';
import { SESSION_COOKIE, type ConsoleRequest } from './request.guard';
import { SessionStore, type ConsoleSession } from '../service/session-store.service';

export class SignInBody {
  /** The person's token (audience `console`); absent when a proxy signs people in. */
  @IsOptional()
  @IsString()
  @MaxLength(TOKEN_BYTES_MAX)
  token?: string;
}

/** What the page learns about who is at the keyboard (docs/console.md, "Signing in"). */
export type SessionView =
  | {
      signedIn: true;
      subject: string;
      expiresAt: string;
      csrfToken: string;
      /** The console's own identity: it reads the panels and forwards the person's actions. */
      via: string;
    }
  | { signedIn: false; signIn: 'token' | 'header'; via: string };

/**
 * Sign-in, the page's view of its session, sign-out. The session lives on
 * the server; the browser holds only a random id in an HttpOnly, SameSite=Strict
 * cookie, and learns its anti-CSRF token here.
 */
@Controller('api/session')
export class SessionController {
  private readonly logger = new Logger('auth');

  constructor(
    private readonly store: SessionStore,
    private readonly persons: PersonVerifier,
    private readonly rights: PersonRights,
    private readonly peers: ConsolePeers,
  ) {}

  @Get()
  current(@Req() req: ConsoleRequest): SessionView {
    return this.view(req.consoleSession);
  }

  @Post()
  @HttpCode(200)
  async signIn(
    @Req() req: ConsoleRequest,
    @Res({ passthrough: true }) res: Response,
    @Body() body: SignInBody,
  ): Promise<SessionView> {
    let person: { identity: VerifiedIdentity; token: string } | undefined;
    try {
      person = await this.person(req, body);
      // A valid token is not enough: the policy must give the person a role (docs/console.md).
      this.rights.admit(person.identity.subject);
    } catch (err) {
      if (err instanceof UnauthenticatedError || err instanceof ForbiddenError)
        recordAuthRefusal(this.logger, req, err, person?.identity.subject);
      throw err;
    }
    const { session, ended } = this.store.create(
      { subject: person.identity.subject, token: person.token },
      person.identity.expiresAtMs,
      req.consoleSession?.id,
    );
    for (const old of ended)
      this.logger.log(
        {
          event: 'console_session_replaced',
          subject: old.subject,
          startedAt: iso(old.startedAtMs),
        },
        "a new sign-in ended this person's oldest session",
      );
    res.cookie(SESSION_COOKIE, session.id, {
      httpOnly: true,
      sameSite: 'strict',
      path: '/',
      secure: servedOverHttps(req),
      maxAge: session.expiresAtMs - Date.now(),
    });
    this.logger.log(
      { event: 'console_sign_in', subject: session.subject, expiresAt: iso(session.expiresAtMs) },
      'signed in',
    );
    return this.view(session);
  }

  @Delete()
  @HttpCode(204)
  signOut(@Req() req: ConsoleRequest, @Res({ passthrough: true }) res: Response): void {
    const session = req.consoleSession;
    if (session !== undefined) {
      this.store.delete(session.id);
      this.logger.log({ event: 'console_sign_out', subject: session.subject }, 'signed out');
    }
    res.clearCookie(SESSION_COOKIE, {
      httpOnly: true,
      sameSite: 'strict',
      path: '/',
      secure: servedOverHttps(req),
    });
  }

  private async person(req: ConsoleRequest, body: SignInBody | undefined) {
    if (this.persons.fromProxy) return this.persons.fromRequest(req);
    const token = body?.token?.trim();
    if (token === undefined || token === '')
      throw new ValidationError([{ field: 'token', message: 'is required' }]);
    return { identity: await this.persons.verify(token), token };
  }

  private view(session: ConsoleSession | undefined): SessionView {
    const via = this.peers.identity;
    if (session === undefined)
      return { signedIn: false, signIn: this.persons.fromProxy ? 'header' : 'token', via };
    return {
      signedIn: true,
      subject: session.subject,
      expiresAt: iso(session.expiresAtMs),
      csrfToken: session.csrfToken,
      via,
    };
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** TLS here, or at the proxy in front (it says so in X-Forwarded-Proto): the cookie is Secure. */
function servedOverHttps(req: ConsoleRequest): boolean {
  const forwarded = req.headers['x-forwarded-proto'];
  const proto = typeof forwarded === 'string' ? forwarded.split(',')[0].trim() : undefined;
  return req.secure || proto === 'https';
}
