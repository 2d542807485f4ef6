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
 * token's expiry, at most `maxAgeMs` away). At most `max` at once; a full
 * store refuses a new sign-in (503) rather than push someone out.
 */
export class SessionStore {
  private readonly sessions = new Map<string, ConsoleSession>();

  constructor(
    private readonly max: number,
    private readonly maxAgeMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Starts a session for a verified token; `replacing` (the browser's old session) ends first. */
  create(actor: Actor, tokenExpiresAtMs: number, replacing?: string): ConsoleSession {
    if (replacing !== undefined) this.sessions.delete(replacing);
    this.sweep();
    if (this.sessions.size >= this.max) {
      throw new DlockError('UNAVAILABLE', `${this.max} people are signed in already`, {
        httpStatus: 503,
        retryAfterMillis: 60_000,
        details: { reason: 'sessions-full' },
      });
    }
    const now = this.now();
    const session: ConsoleSession = {
      ...actor,
      id: randomId(),
      csrfToken: randomId(),
      startedAtMs: now,
      expiresAtMs: Math.min(tokenExpiresAtMs, now + this.maxAgeMs),
    };
    this.sessions.set(session.id, session);
    return session;
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
    session.expiresAtMs = Math.min(tokenExpiresAtMs, session.startedAtMs + this.maxAgeMs);
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
