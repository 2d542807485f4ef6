import { Logger, type INestApplication } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { ForbiddenError, UnauthenticatedError } from '@dlock/identity';
import {
  countAuthRefusalsFromStart,
  recordAuthRefusal,
  type RefusalKind,
} from '@dlock/http-contract';
import type { DlockError } from '@dlock/lock-api';
import type { ConsoleConfig } from '../../config';
import { sameSecret, SessionStore, type ConsoleSession } from '../service/session-store.service';
import { PersonVerifier } from '../service/person-verifier.service';

export const SESSION_COOKIE = 'dlock_console_session';
export const CSRF_HEADER = 'x-csrf-token';
export const SESSION_PATH = '/api/session';

/** Probes and scrapers are answered whatever the Host: a kubelet probes the pod's IP. */
const UNCHECKED_PATHS: ReadonlySet<string> = new Set(['/health/live', '/health/ready', '/metrics']);
const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Sec-Fetch-Site values of a request the console's own page (or a person typing) made. */
const OWN_FETCH_SITES: ReadonlySet<string> = new Set(['same-origin', 'none']);

export interface ConsoleRequest extends Request {
  /** Set by the session gate on every /api request whose cookie names a live session. */
  consoleSession?: ConsoleSession;
}

const logger = new Logger('auth');

function refuse(
  req: Request,
  next: NextFunction,
  err: DlockError,
  kind: RefusalKind,
  subject?: string,
): void {
  recordAuthRefusal(logger, req, err, subject, kind);
  next(err);
}

/**
 * The Host names the console answers to (docs/console.md, "Host and
 * Origin"): CONSOLE_ALLOWED_HOSTS, or loopback with the port it listens on
 * plus CONSOLE_HOST when that is one address.
 */
export function allowedHosts(
  configured: readonly string[],
  bindHost: string,
  port: number,
): ReadonlySet<string> {
  if (configured.length > 0) return new Set(configured);
  const hosts = ['127.0.0.1', 'localhost', '[::1]'];
  if (!['0.0.0.0', '::', ''].includes(bindHost))
    hosts.push(bindHost.includes(':') ? `[${bindHost}]` : bindHost.toLowerCase());
  return new Set(hosts.map((h) => `${h}:${port}`));
}

/** `https://host:port` → `host:port`; anything else (including `null`) → undefined. */
function originHost(origin: string): string | undefined {
  try {
    const url = new URL(origin);
    const plain = url.pathname === '/' && url.search === '' && url.username === '';
    if (!plain || !['http:', 'https:'].includes(url.protocol)) return undefined;
    return url.host.toLowerCase();
  } catch {
    return undefined;
  }
}

/**
 * Refuses, before anything runs, a request for a Host that is not the
 * console's (a DNS-rebinding page reaching 127.0.0.1 under its own name), one
 * whose Origin is another site, and a state-changing one without Origin that
 * the browser says came from another site.
 */
export function hostAndOriginGuard(hosts: () => ReadonlySet<string>) {
  countAuthRefusalsFromStart();
  return (req: Request, _res: Response, next: NextFunction): void => {
    if (UNCHECKED_PATHS.has(req.path)) return next();
    const own = hosts();
    const host = req.headers.host?.toLowerCase();
    if (host === undefined || !own.has(host)) {
      const err = new ForbiddenError('this Host is not served by the console', { reason: 'host' });
      return refuse(req, next, err, 'forbidden');
    }
    const origin = req.headers.origin;
    const site = req.headers['sec-fetch-site'];
    const foreign =
      origin !== undefined
        ? !own.has(originHost(origin) ?? '')
        : !SAFE_METHODS.has(req.method) && site !== undefined && !OWN_FETCH_SITES.has(site);
    if (foreign) {
      const err = new ForbiddenError('cross-origin request refused', { reason: 'origin' });
      return refuse(req, next, err, 'forbidden');
    }
    next();
  };
}

/**
 * What every answer of the console tells the browser (docs/security.md,
 * "The console's page"): the page loads only its own script, stylesheet and
 * icon and talks only to its own origin (no inline script or style, no eval),
 * no other page may frame it, types are never sniffed, and no address of it
 * leaks in a Referer.
 */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    "connect-src 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; '),
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
};

export function pageHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.set(PAGE_HEADERS);
  next();
}

/** The session id the browser sent, if any (one cookie; nothing else is read from it). */
export function sessionIdOf(req: Request): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === SESSION_COOKIE) return value.join('=');
  }
  return undefined;
}

/**
 * Every /api request but the session's own needs a signed-in person (401),
 * and every POST and DELETE but signing in needs that session's anti-CSRF
 * token in X-CSRF-Token (403). Behind a proxy that signs people in (`header`
 * sign-in), the token it sends with each request keeps the session's fresh.
 */
export function sessionGate(store: SessionStore, persons: PersonVerifier) {
  return (req: ConsoleRequest, _res: Response, next: NextFunction): void => {
    if (!req.path.startsWith('/api/') && req.path !== '/api') return next();
    req.consoleSession = store.get(sessionIdOf(req));
    const session = req.consoleSession;
    const isSession = req.path === SESSION_PATH;
    if (!isSession && session === undefined) {
      return refuse(req, next, new UnauthenticatedError('sign in first'), 'unauthenticated');
    }
    const signingIn = isSession && req.method === 'POST';
    if (session !== undefined && !signingIn && !SAFE_METHODS.has(req.method)) {
      const sent = req.headers[CSRF_HEADER];
      if (typeof sent !== 'string' || !sameSecret(sent, session.csrfToken)) {
        const err = new ForbiddenError('missing or wrong X-CSRF-Token', { reason: 'csrf' });
        return refuse(req, next, err, 'forbidden', session.subject);
      }
    }
    if (session === undefined || !persons.fromProxy) return next();
    persons.refresh(req, session).then(
      (stillHim) => {
        if (stillHim) return next();
        store.delete(session.id);
        const err = new UnauthenticatedError('the signed-in person changed: sign in again');
        refuse(req, next, err, 'unauthenticated', session.subject);
      },
      (err: unknown) => next(err),
    );
  };
}

/**
 * The console's gate (docs/console.md, "Signing in"): the Host and Origin
 * guard, then the session gate, installed before the body is read. The Host
 * names are those of the configured port until `listeningOn` gives the one
 * listened on (PORT=0 learns it at listen).
 */
export function gateRequests(config: ConsoleConfig) {
  let hosts = allowedHosts(config.allowedHosts, config.CONSOLE_HOST, config.PORT);
  return {
    install(app: INestApplication): void {
      // First, so a refusal carries them too.
      app.use(pageHeaders);
      app.use(hostAndOriginGuard(() => hosts));
      app.use(sessionGate(app.get(SessionStore), app.get(PersonVerifier)));
    },
    listeningOn(port: number): ReadonlySet<string> {
      hosts = allowedHosts(config.allowedHosts, config.CONSOLE_HOST, port);
      return hosts;
    },
  };
}
