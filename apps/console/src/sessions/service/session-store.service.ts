import { randomBytes, timingSafeEqual } from 'node:crypto';
import { DlockError } from '@dlock/lock-api';

/** The person at the keyboard, as the services will see them (docs/console.md, "Signing in"). */
export interface Actor {
  /** Their token's subject: the name the policy and every audit record use. */
  subject: string;
  /** Their token (audience `console`), forwarded as X-Acting-For on every action. */
  token: string;
}

export interface ConsoleSession extends Actor {
  id: string;
  /** Sent back by the page as X-CSRF-Token on every POST and DELETE. */
  csrfToken: string;
  startedAtMs: number;
  expiresAtMs: number;
}

const ID_BYTES = 32;

function randomId(): string {
  return randomBytes(ID_BYTES).toString('base64url');
}

/** Compares secrets without leaking how much of a guess was right. */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * The signed-in people, in memory: a random id (the cookie), the person's
 * verified token kept server-side, an anti-CSRF token, and an end (the
 * token's expiry, at most `maxAgeMs` away). At most `perSubjectMax` per
 * person: their next sign-in ends their oldest session, so one identity
 * cannot take every place (docs/console.md, "Signing in"). At most `max` in
 * all; a full store refuses a new sign-in (503) rather than push someone else out.
 */
export class SessionStore {
  private readonly sessions = new Map<string, ConsoleSession>();

  constructor(
    private readonly limits: { max: number; perSubjectMax: number; maxAgeMs: number },
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Starts a session for a verified token; `replacing` (the browser's old
   * session) ends first, then the person's oldest while they hold their share.
   * Returns the new session and the ones it ended.
   */
  create(
    actor: Actor,
    tokenExpiresAtMs: number,
    replacing?: string,
  ): { session: ConsoleSession; ended: ConsoleSession[] } {
    if (replacing !== undefined) this.sessions.delete(replacing);
    this.sweep();
    // Map order is sign-in order: the first of the person's is their oldest.
    const theirs = [...this.sessions.values()].filter((s) => s.subject === actor.subject);
    const ended = theirs.slice(0, Math.max(0, theirs.length - this.limits.perSubjectMax + 1));
    if (this.sessions.size - ended.length >= this.limits.max) {
      throw new DlockError('UNAVAILABLE', `${this.limits.max} people are signed in already`, {
        httpStatus: 503,
        retryAfterMillis: 60_000,
        details: { reason: 'sessions-full' },
      });
    }
    for (const s of ended) this.sessions.delete(s.id);
    const now = this.now();
    const session: ConsoleSession = {
      ...actor,
      id: randomId(),
      csrfToken: randomId(),
      startedAtMs: now,
      expiresAtMs: Math.min(tokenExpiresAtMs, now + this.limits.maxAgeMs),
    };
    this.sessions.set(session.id, session);
    return { session, ended };
  }

  /** The live session of this id, if any; an expired one is forgotten here. */
  get(id: string | undefined): ConsoleSession | undefined {
    if (id === undefined) return undefined;
    const session = this.sessions.get(id);
    if (session === undefined) return undefined;
    if (this.now() < session.expiresAtMs) return session;
    this.sessions.delete(id);
    return undefined;
  }

  /**
   * A fresher token of the same person (a proxy sends one with every request,
   * docs/console.md); the session lives as long as the newest token allows.
   */
  refresh(session: ConsoleSession, token: string, tokenExpiresAtMs: number): void {
    session.token = token;
    session.expiresAtMs = Math.min(tokenExpiresAtMs, session.startedAtMs + this.limits.maxAgeMs);
  }

  delete(id: string): void {
    this.sessions.delete(id);
  }

  get size(): number {
    this.sweep();
    return this.sessions.size;
  }

  private sweep(): void {
    const now = this.now();
    for (const [id, s] of this.sessions) if (now >= s.expiresAtMs) this.sessions.delete(id);
  }
}
