import { mulberry32 as prng } from '@dlock/prng';
import type { LockAnswer, LockOp, LockOpKind } from './ops';

export type SimulatedBug = 'release-ignores-token' | 'acquire-ignores-holder' | 'token-goes-back';

export interface SimOptions {
  seed: number;
  keys: number;
  workers: number;
  durationMs: number;
  /** Fraction of lock calls whose answer is lost (the effect then happens or not, 50/50). */
  lostRate?: number;
  /** Chance, per call, that a worker stops (no calls, no heartbeats) past its TTLs. */
  pauseRate?: number;
  bug?: SimulatedBug;
}

export interface Simulated {
  ops: LockOp[];
  /** How many answers the bug changed. */
  bugFired: number;
}

const SESSION_TTL_MS = 3_000;
const LEASE_MS = 2_000;
const TOKEN_BASE = 1_000_000_000n;

interface Grant {
  owner: string;
  session: string;
  token: bigint;
  leaseEnd: number;
  leaseMs: number;
}
interface Worker {
  id: string;
  session: string | null;
  held: { key: string; token: bigint } | null;
  pausedUntil: number;
}
interface Pending {
  op: LockOp;
  worker: Worker | null;
  applyAt: number;
  lost: boolean;
}

/**
 * A lock-server that follows docs/lock-server.md exactly (or breaks one rule),
 * driven by workers with overlapping calls, pauses, lost answers, an operator
 * who revokes, and heartbeats. Each call takes effect at one instant strictly
 * inside its interval, so the history is linearizable unless a bug is set.
 */
class Simulation {
  readonly ops: LockOp[] = [];
  bugFired = 0;
  private readonly random: () => number;
  private readonly sessions = new Map<string, { expiresAt: number; closed: boolean }>();
  private readonly locks = new Map<string, Grant | null>();
  private nextToken = 0n;
  private current = 0;
  private sessionsOpened = 0;
  private readonly queue: Array<{ at: number; run: () => void }> = [];

  constructor(private readonly o: SimOptions) {
    this.random = prng(o.seed);
  }

  run(): void {
    for (let w = 0; w < this.o.workers; w++) {
      const worker: Worker = { id: `w${w}`, session: null, held: null, pausedUntil: 0 };
      this.at(this.between(0, 50), () => this.act(worker));
    }
    this.at(500, () => this.operate());
    for (let e = this.queue.shift(); e; e = this.queue.shift()) {
      if (e.at > this.o.durationMs) break;
      this.current = e.at;
      e.run();
    }
  }

  private between(a: number, b: number): number {
    return a + this.random() * (b - a);
  }

  private at(at: number, run: () => void): void {
    // Sorted insert from the back: events are mostly scheduled in order.
    let i = this.queue.length;
    while (i > 0 && this.queue[i - 1].at > at) i--;
    this.queue.splice(i, 0, { at, run });
  }

  /** One call: sent now, takes effect at applyAt, answered at returnAt (or never, when lost). */
  private call(worker: Worker | null, fields: Partial<LockOp> & { kind: LockOpKind }, now: number) {
    const applyAt = now + this.between(1, 15);
    const lossy = fields.kind !== 'open' && fields.kind !== 'heartbeat';
    const lost = lossy && this.random() < (this.o.lostRate ?? 0);
    const op: LockOp = {
      seq: this.ops.length,
      key: null,
      owner: worker?.id ?? 'operator',
      session: worker?.session ?? null,
      token: null,
      ttlMs: null,
      callAt: now,
      returnAt: lost ? Infinity : applyAt + this.between(1, 15),
      answer: { type: 'unknown' },
      ...fields,
    };
    this.ops.push(op);
    const p: Pending = { op, worker, applyAt, lost };
    this.at(applyAt, () => this.apply(p));
  }

  private apply(p: Pending): void {
    const effect = !p.lost || this.random() < 0.5;
    const answer = effect ? this.serve(p.op, p.applyAt) : { type: 'unknown' as const };
    if (!p.lost) p.op.answer = answer;
    const w = p.worker;
    if (!w || p.op.kind === 'heartbeat') return;
    const learnedAt = p.lost ? p.applyAt + 100 : p.op.returnAt;
    this.at(learnedAt, () => {
      this.learn(w, p.op, p.lost ? { type: 'unknown' } : answer);
      const pause = this.random() < (this.o.pauseRate ?? 0) ? this.between(3_500, 6_000) : 0;
      w.pausedUntil = learnedAt + pause;
      this.at(w.pausedUntil + this.between(5, 40), () => this.act(w));
    });
  }

  /** What the worker believes after an answer (a lost one: nothing held, as the SDK would). */
  private learn(w: Worker, op: LockOp, a: LockAnswer): void {
    if (op.kind === 'open' && a.type === 'done') {
      w.session = op.session;
      this.at(op.returnAt + 1_000, () => this.heartbeat(w, op.session!));
    } else if (op.kind === 'acquire') {
      w.held = a.type === 'granted' ? { key: op.key!, token: a.token } : null;
    } else if (op.kind === 'renew' && a.type !== 'granted') {
      w.held = null;
    } else if (op.kind === 'release' || op.kind === 'close') {
      w.held = null;
      if (op.kind === 'close') w.session = null;
    }
    if (a.type === 'session-expired' || a.type === 'session-unknown') {
      w.session = null;
      w.held = null;
    }
  }

  private heartbeat(w: Worker, session: string): void {
    if (w.session !== session) return;
    const now = this.current;
    if (now >= w.pausedUntil) this.call(w, { kind: 'heartbeat', session }, now);
    this.at(now + 1_000, () => this.heartbeat(w, session));
  }

  private act(w: Worker): void {
    const now = this.current;
    const key = `k${Math.floor(this.random() * this.o.keys)}`;
    const r = this.random();
    if (!w.session) this.call(w, { kind: 'open' }, now);
    else if (w.held && r < 0.5) {
      this.call(w, { kind: 'renew', key: w.held.key, token: w.held.token }, now);
    } else if (w.held && r < 0.9) {
      this.call(w, { kind: 'release', key: w.held.key, token: w.held.token }, now);
    } else if (r < 0.005) this.call(w, { kind: 'close' }, now);
    else if (r < 0.15) this.call(w, { kind: 'inspect', key, owner: 'reader' }, now);
    else this.call(w, { kind: 'acquire', key: w.held?.key ?? key, ttlMs: LEASE_MS }, now);
  }

  private operate(): void {
    const now = this.current;
    const key = `k${Math.floor(this.random() * this.o.keys)}`;
    const live = this.liveHolder(key, now);
    const r = this.random();
    const token = r < 0.5 && live ? live.token : r < 0.7 ? BigInt(Math.floor(r * 100)) : null;
    this.call(null, { kind: 'revoke', key, token }, now);
    this.at(now + this.between(300, 900), () => this.operate());
  }

  private liveHolder(key: string, now: number): Grant | null {
    const g = this.locks.get(key) ?? null;
    if (!g || g.leaseEnd <= now) return null;
    const s = this.sessions.get(g.session);
    return s && !s.closed && s.expiresAt > now ? g : null;
  }

  private sessionAnswer(session: string | null, now: number): LockAnswer | null {
    const s = session === null ? undefined : this.sessions.get(session);
    if (!s || s.closed) return { type: 'session-unknown' };
    return s.expiresAt <= now ? { type: 'session-expired' } : null;
  }

  private serve(op: LockOp, now: number): LockAnswer {
    switch (op.kind) {
      case 'open': {
        op.session = `s${++this.sessionsOpened}`;
        this.sessions.set(op.session, { expiresAt: now + SESSION_TTL_MS, closed: false });
        return { type: 'done', ttlMs: SESSION_TTL_MS };
      }
      case 'heartbeat': {
        const refused = this.sessionAnswer(op.session, now);
        if (refused) return refused;
        this.sessions.get(op.session!)!.expiresAt = now + SESSION_TTL_MS;
        return { type: 'done', ttlMs: SESSION_TTL_MS };
      }
      case 'close':
        return this.serveClose(op, now);
      case 'acquire':
        return this.sessionAnswer(op.session, now) ?? this.serveAcquire(op, now);
      case 'renew':
        return this.sessionAnswer(op.session, now) ?? this.serveRenew(op, now);
      case 'release':
        return this.serveRelease(op, now);
      case 'inspect': {
        const g = this.liveHolder(op.key!, now);
        if (g) return { type: 'held', owner: g.owner, token: g.token };
        return this.locks.has(op.key!) ? { type: 'free' } : { type: 'never-seen' };
      }
      case 'revoke':
        return this.serveRevoke(op, now);
    }
  }

  private serveClose(op: LockOp, _now: number): LockAnswer {
    const s = op.session === null ? undefined : this.sessions.get(op.session);
    if (!s || s.closed) return { type: 'session-unknown' };
    s.closed = true;
    for (const [k, g] of this.locks) if (g?.session === op.session) this.locks.set(k, null);
    return { type: 'done' };
  }

  private serveAcquire(op: LockOp, now: number): LockAnswer {
    const key = op.key!;
    const g = this.liveHolder(key, now);
    const owner = op.owner!;
    const session = op.session!;
    if (g && g.owner === owner && g.session === session) {
      return { type: 'granted', token: g.token, owner, session, leaseMs: g.leaseMs };
    }
    if (g && this.o.bug !== 'acquire-ignores-holder') return { type: 'contended' };
    if (g) this.bugFired++;
    let token = ++this.nextToken;
    if (this.o.bug === 'token-goes-back') {
      if (this.locks.has(key)) this.bugFired++;
      token = TOKEN_BASE - token;
    }
    const leaseMs = op.ttlMs ?? LEASE_MS;
    this.locks.set(key, { owner, session, token, leaseEnd: now + leaseMs, leaseMs });
    return { type: 'granted', token, owner, session, leaseMs };
  }

  private serveRenew(op: LockOp, now: number): LockAnswer {
    const g = this.liveHolder(op.key!, now);
    if (!g || g.token !== op.token || g.session !== op.session) return { type: 'lock-lost' };
    g.leaseEnd = now + g.leaseMs;
    return {
      type: 'granted',
      token: g.token,
      owner: g.owner,
      session: g.session,
      leaseMs: g.leaseMs,
    };
  }

  private serveRelease(op: LockOp, now: number): LockAnswer {
    const g = this.liveHolder(op.key!, now);
    if (g && g.token !== op.token && this.o.bug === 'release-ignores-token') {
      this.bugFired++;
      this.locks.set(op.key!, null);
      return { type: 'done' };
    }
    if (!g || g.token !== op.token) return { type: 'lock-lost' };
    this.locks.set(op.key!, null);
    return { type: 'done' };
  }

  private serveRevoke(op: LockOp, now: number): LockAnswer {
    const g = this.liveHolder(op.key!, now);
    if (!g) return { type: 'not-held' };
    if (op.token !== null && op.token !== g.token) return { type: 'fenced-out' };
    const floor = this.o.bug === 'token-goes-back' ? g.token + 1n : ++this.nextToken;
    this.locks.set(op.key!, null);
    return { type: 'revoked', revokedToken: g.token, floor };
  }
}

/** A simulated history (see Simulation). */
export function simulateHistory(o: SimOptions): Simulated {
  const sim = new Simulation(o);
  sim.run();
  return { ops: sim.ops, bugFired: sim.bugFired };
}
