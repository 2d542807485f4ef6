import { LOCK_TTL_MIN_MS } from '@dlock/lock-api';
import type { LockAnswer, LockOp } from './lock-op.model';
import { LimitExceeded } from './linearization-search.checker';
import type { SessionClock } from './session-clock.model';

/** The grant a key is held under, as far as the model knows it. */
export interface Holder {
  owner: string;
  session: string;
  /** null: granted by a call whose answer is unknown; the token is then above `above`. */
  token: bigint | null;
  above: bigint;
  /** A lower bound of when the lease last (re)started: the send time of its grant or renew. */
  leaseFrom: number;
  leaseMs: number;
}

/**
 * The effect of an indeterminate call, which may happen at any moment after
 * `from` (its send time), as often as the model likes: a superset of "once,
 * or never", and it keeps the set of pending effects small.
 */
export interface Pending {
  kind: 'acquire' | 'release' | 'revoke' | 'close';
  owner: string | null;
  session: string | null;
  token: bigint | null;
  ttlMs: number | null;
  from: number;
  /** The last instant it may happen: its send time, its own wait, then the effect window. */
  until: number;
}

/**
 * One lock key (docs/lock-server.md, L3–L8). `floor` is the highest token
 * granted, or floor set by a revocation, so far; `open` says an unknown token
 * or floor may lie above it. `closed` lists the sessions ended by L3.
 */
export interface KeyState {
  holder: Holder | null;
  floor: bigint;
  open: boolean;
  /** Some grant may have been made (an L7 404, "never acquired", needs false). */
  granted: boolean;
  closed: readonly string[];
  pending: readonly Pending[];
}

export const KEY_INITIAL: KeyState = {
  holder: null,
  floor: 0n,
  open: false,
  granted: false,
  closed: [],
  pending: [],
};

/** States one step may branch into through pending effects before the model gives up. */
export const CLOSURE_STATES_MAX = 128;

/** Next states, or why the call's answer is impossible from this state. */
export type StepResult<S> = S[] | string;

export interface ModelContext {
  clock: SessionClock;
  slackMs: number;
  /**
   * How long after it was sent (and after its own server-side wait) a call
   * whose answer was lost may still take effect (docs/harness.md,
   * "Indeterminate calls"): the lock-server's statement and etcd deadlines
   * are 1.5 s (docs/lock-server.md, docs/lock-server-etcd.md).
   */
  effectWindowMs: number;
  /** An instant as explanations show it (relative to the history's start). */
  at(ms: number): string;
}

const short = (id: string | null) => (id === null ? '?' : id.slice(0, 8));
const tok = (h: Holder) => (h.token === null ? `unknown (> ${h.above})` : String(h.token));
const who = (h: Holder) => `${h.owner} (session ${short(h.session)}) holding token ${tok(h)}`;

/** A token an answer shows may be the holder's: its own, or any above `above` when unknown. */
function mayBe(h: Holder, token: bigint | null): boolean {
  return token !== null && (h.token === token || (h.token === null && token > h.above));
}

/** The holder's unknown token turns out to be `token` (it is the latest grant, so the floor). */
function resolved(s: KeyState, token: bigint): KeyState {
  const h = s.holder;
  if (!h || h.token !== null) return s;
  return { ...s, holder: { ...h, token }, floor: token, open: false };
}

function maxOf(a: bigint, b: bigint | null): bigint {
  return b !== null && b > a ? b : a;
}

function pendingKey(p: Pending): string {
  return `${p.kind}\u0001${p.owner}\u0001${p.session}\u0001${p.token}\u0001${p.ttlMs}`;
}

/** L3 of `session`: closed for good, and its lock (if it holds this one) freed. */
function closeOf(s: KeyState, session: string): KeyState {
  return {
    ...s,
    holder: s.holder?.session === session ? null : s.holder,
    closed: [...s.closed, session].sort(),
  };
}

/** Each state, and the same state with the session of the lost L3 `p` closed too. */
function withClosedToo(states: KeyState[], p: Pending): KeyState[] {
  return states.flatMap((s) => [s, closeOf(s, p.session!)]);
}

function freed(s: KeyState, token: bigint | null): KeyState {
  const r = token === null ? s : resolved(s, token);
  return { ...r, holder: null };
}

/**
 * The lock model of docs/harness.md, "Linearizability". Expiry is an internal
 * event the model may assume at any instant from the earliest moment the
 * server could have let the lease or the session lapse, and never before; it
 * is never forced, and a lapsed grant stays the holder until another grant,
 * a release, a revocation or L3 replaces it (the server may revive it after
 * an outage). Answers that need the holder dead are allowed once it may be.
 */
export class LockKeyModel {
  /**
   * `lastUse`: per session, the last instant a call of this history that
   * names it is answered (or, a lost one, sent); a closed session is
   * forgotten after it: once `tidy` has dropped its pending effects, nothing
   * reads its being closed.
   * `revealedAt`: per token, when the first answer of this history that
   * showed it came back.
   */
  constructor(
    private readonly ctx: ModelContext,
    private readonly lastUse: ReadonlyMap<string, number> = new Map(),
    private readonly revealedAt: ReadonlyMap<bigint, number> = new Map(),
  ) {}

  /**
   * Whether a token a call presents (renew, release, expectedToken) may be
   * the holder's. A client knows a token only from an answer, and every answer
   * passes the recorder: once an answer showing it came back before the call
   * was sent, that grant is known to the model by its token, and a grant whose
   * token is still unknown is another, later one (docs/harness.md).
   */
  private presented(h: Holder, token: bigint | null, sentAt: number): boolean {
    if (token === null) return false;
    if (h.token !== null) return h.token === token;
    return token > h.above && !((this.revealedAt.get(token) ?? Infinity) < sentAt);
  }

  /** Whether the holder's lease or session may have lapsed at some instant of the call. */
  mayBeGone(h: Holder, s: KeyState, op: LockOp): boolean {
    if (s.closed.includes(h.session)) return true;
    if (op.returnAt >= h.leaseFrom + h.leaseMs - this.ctx.slackMs) return true;
    return this.ctx.clock.mayLapse(h.session, op.callAt, op.returnAt);
  }

  private live(h: Holder): string {
    return (
      `${who(h)}, whose lease runs until at least ${this.ctx.at(h.leaseFrom + h.leaseMs - this.ctx.slackMs)} ` +
      `and whose session cannot have lapsed during the call`
    );
  }

  /** One call on one state; pending effects were let happen before it by `expand`. */
  step(s: KeyState, op: LockOp): StepResult<KeyState> {
    // A deferred call is placed at its send time: tidy there too, as an outage sends nothing else.
    const r = op.deferred ? [this.register(s, op)] : this.apply(s, op);
    return typeof r === 'string' ? r : r.flatMap((after) => this.tidy(after, op.callAt));
  }

  /**
   * The states of a configuration, and every state reachable from them by
   * letting pending effects happen (in any order, any number of times)
   * before `op` takes effect: computed once for the whole configuration.
   */
  expand(states: KeyState[], op: LockOp): KeyState[] {
    if (op.deferred || states.every((s) => s.pending.length === 0)) return states;
    // By core state (see reduce): a state another one subsumes, and so all it leads to, is skipped.
    const seen = new Map<string, KeyState[]>();
    let count = 0;
    const frontier: KeyState[] = [];
    const add = (next: KeyState) => {
      const core = this.coreKeyOf(next, false);
      const group = seen.get(core) ?? [];
      if (group.some((t) => subsumes(t, next))) return;
      if (++count > CLOSURE_STATES_MAX) {
        throw new LimitExceeded(`more than ${CLOSURE_STATES_MAX} states from lost calls`);
      }
      seen.set(core, [...group, next]);
      frontier.push(next);
    };
    states.forEach(add);
    for (let st = frontier.pop(); st; st = frontier.pop()) {
      for (const p of st.pending) {
        if (!this.matters(st, p, op)) continue;
        for (const fired of this.fire(st, p, op)) add(this.forget(fired, op.callAt));
      }
    }
    return [...seen.values()].flat();
  }

  /**
   * Whether letting `p` happen before `op` can change anything. A lost L3 of
   * a session that neither holds the key nor is named by `op` only adds the
   * session to `closed`, which nothing reads until a call names it or it
   * holds the key: it is let happen then (or when its window ends, see
   * `tidy`). Without this, the lost L3 calls of an outage multiply the
   * states by every subset of their sessions.
   */
  private matters(s: KeyState, p: Pending, op: LockOp): boolean {
    if (p.kind !== 'close') return true;
    const named = op.answer.type === 'granted' ? op.answer.session : null;
    return p.session === s.holder?.session || p.session === op.session || p.session === named;
  }

  /**
   * Forgets what can no longer matter once `nowMs` has passed (every later
   * call was sent after it): pending effects past their window or of a session
   * closed for good (they had their chance before this call), and closed
   * sessions no call of this history names any more. Keeps states small. A
   * lost L3 whose window ends before it mattered (`matters`) may still have
   * closed its session: both states go on while a later call names it.
   */
  private tidy(s: KeyState, nowMs: number): KeyState[] {
    const pending = s.pending.filter((p) => this.mayStillHappen(s, p, nowMs));
    const closed = this.stillNamed(s.closed, nowMs);
    if (pending.length === s.pending.length && closed.length === s.closed.length) return [s];
    const kept = { ...s, pending, closed };
    const lapsed = s.pending.filter(
      (p) =>
        p.kind === 'close' &&
        p.until < nowMs &&
        p.session !== null &&
        p.session !== s.holder?.session &&
        !closed.includes(p.session) &&
        (this.lastUse.get(p.session) ?? Infinity) >= nowMs,
    );
    return lapsed.length === 0 ? [kept] : lapsed.reduce(withClosedToo, [kept]);
  }

  /** The closed sessions a call of this history may still name after `nowMs`. */
  private stillNamed(closed: readonly string[], nowMs: number): readonly string[] {
    return closed.filter((c) => (this.lastUse.get(c) ?? Infinity) >= nowMs);
  }

  /**
   * `tidy` without the end of windows, for the states a step's pending
   * effects lead to: a session closed by one of them is forgotten (with its
   * own pending effects, which its being closed cancels) when no call names
   * it any more, or the lost L3 calls of an outage make every subset of
   * their sessions a state of its own.
   */
  private forget(s: KeyState, nowMs: number): KeyState {
    const closed = this.stillNamed(s.closed, nowMs);
    if (closed.length === s.closed.length) return s;
    const cancelled = (p: Pending) =>
      p.session !== null && p.kind !== 'release' && s.closed.includes(p.session);
    return { ...s, closed, pending: s.pending.filter((p) => !cancelled(p)) };
  }

  /**
   * A pending effect may still happen unless its window has passed, its
   * session was closed for good (acquire, L3), or the grant its token names is
   * gone for good: a later token (or floor) exists, and a key's tokens only grow.
   */
  private mayStillHappen(s: KeyState, p: Pending, nowMs: number): boolean {
    if (p.until < nowMs) return false;
    if (p.session !== null && p.kind !== 'release' && s.closed.includes(p.session)) return false;
    return !(p.token !== null && p.kind !== 'acquire' && s.floor > p.token);
  }

  private register(s: KeyState, op: LockOp): KeyState {
    if (
      op.kind !== 'acquire' &&
      op.kind !== 'release' &&
      op.kind !== 'revoke' &&
      op.kind !== 'close'
    ) {
      return s;
    }
    const p: Pending = {
      kind: op.kind,
      owner: op.owner,
      session: op.session,
      token: op.token,
      ttlMs: op.ttlMs,
      from: op.callAt,
      until: op.callAt + (op.waitMs ?? 0) + this.ctx.effectWindowMs,
    };
    if (!this.mayStillHappen(s, p, p.from)) return s;
    const same = s.pending.find((q) => pendingKey(q) === pendingKey(p));
    // One entry per effect: the earliest start and the latest end allow the most.
    if (same && same.from <= p.from && same.until >= p.until) return s;
    if (same) {
      p.from = Math.min(p.from, same.from);
      p.until = Math.max(p.until, same.until);
    }
    const pending = [...s.pending.filter((q) => q !== same), p].sort((a, b) =>
      pendingKey(a) < pendingKey(b) ? -1 : 1,
    );
    return { ...s, pending };
  }

  /** A pending effect happening somewhere between its send time and the end of `op`. */
  private fire(s: KeyState, p: Pending, op: LockOp): KeyState[] {
    const h = s.holder;
    switch (p.kind) {
      case 'acquire': {
        const asked: LockOp = {
          ...op,
          callAt: p.from,
          owner: p.owner,
          session: p.session,
          ttlMs: p.ttlMs,
        };
        return this.grants(s, asked, null);
      }
      case 'release':
        return h && this.presented(h, p.token, p.from) ? [freed(s, p.token)] : [];
      case 'revoke':
        if (!h || (p.token !== null && !this.presented(h, p.token, p.from))) return [];
        return [{ ...s, holder: null, floor: maxOf(s.floor, h.token), open: true }];
      case 'close':
        return p.session === null || s.closed.includes(p.session) ? [] : [closeOf(s, p.session)];
    }
  }

  private apply(s: KeyState, op: LockOp): StepResult<KeyState> {
    switch (op.kind) {
      case 'acquire':
        return this.acquire(s, op);
      case 'renew':
        return this.renew(s, op);
      case 'release':
        return this.release(s, op);
      case 'inspect':
        return this.inspect(s, op);
      case 'revoke':
        return this.revoke(s, op);
      case 'close':
        return this.close(s, op);
      case 'open':
      case 'heartbeat':
        return [s];
    }
  }

  /** L2-style session answers on L4/L5: the session is closed or may have lapsed. */
  private sessionGone(s: KeyState, op: LockOp): StepResult<KeyState> {
    if (op.session !== null && s.closed.includes(op.session)) return [s];
    if (this.ctx.clock.mayLapse(op.session, op.callAt, op.returnAt)) return [s];
    return `answered ${op.answer.type === 'session-expired' ? 'SESSION_EXPIRED' : 'SESSION_UNKNOWN'} while session ${short(op.session)} was certainly alive (it proved life within its TTL throughout the call)`;
  }

  private acquire(s: KeyState, op: LockOp): StepResult<KeyState> {
    const a = op.answer;
    switch (a.type) {
      case 'unknown':
        return [s, ...this.grants(s, op, null)];
      case 'granted': {
        const next = this.grants(s, op, a);
        return next.length > 0 ? next : this.whyNotGranted(s, op, a);
      }
      case 'contended': {
        const h = s.holder;
        if (h && !(h.owner === op.owner && h.session === op.session)) return [s];
        return h
          ? `answered LOCK_CONTENDED to the holder itself (${who(h)}), which gets its grant back`
          : 'answered LOCK_CONTENDED while no one held the key';
      }
      case 'session-expired':
      case 'session-unknown':
        return this.sessionGone(s, op);
      default:
        return `acquire cannot answer ${a.type}`;
    }
  }

  /** The states an acquire may leave behind when it granted `g` (null: granted something unknown). */
  private grants(
    s: KeyState,
    op: LockOp,
    g: Extract<LockAnswer, { type: 'granted' }> | null,
  ): KeyState[] {
    const out: KeyState[] = [];
    if (op.session === null || op.owner === null || s.closed.includes(op.session)) return out;
    if (g && (g.owner !== op.owner || g.session !== op.session)) return out;
    const h = s.holder;
    // The same owner and session get the grant they hold back unchanged (docs/lock-server.md).
    if (g && h && h.owner === op.owner && h.session === op.session && mayBe(h, g.token)) {
      out.push(resolved(s, g.token));
    }
    if (h && !this.mayBeGone(h, s, op)) return out;
    if (g && g.token <= s.floor) return out;
    const holder: Holder = {
      owner: op.owner,
      session: op.session,
      token: g ? g.token : null,
      above: s.floor,
      leaseFrom: op.callAt,
      leaseMs: g ? g.leaseMs : (op.ttlMs ?? LOCK_TTL_MIN_MS),
    };
    out.push({ ...s, holder, floor: g ? g.token : s.floor, open: !g, granted: true });
    return out;
  }

  private whyNotGranted(
    s: KeyState,
    op: LockOp,
    g: Extract<LockAnswer, { type: 'granted' }>,
  ): string {
    const h = s.holder;
    if (g.owner !== op.owner || g.session !== op.session) {
      return `granted to ${g.owner} (session ${short(g.session)}) although ${op.owner} asked`;
    }
    if (op.session !== null && s.closed.includes(op.session)) {
      return `granted token ${g.token} on session ${short(op.session)} after that session was closed (L3)`;
    }
    if (h && !this.mayBeGone(h, s, op)) {
      if (h.owner === op.owner && h.session === op.session) {
        return `the holder's own re-acquire returned token ${g.token}, not its grant: ${who(h)}`;
      }
      return `granted token ${g.token} while the key was held by ${this.live(h)}`;
    }
    const floor = s.open ? `at least ${s.floor}` : String(s.floor);
    return `token ${g.token} is not above ${floor}, the highest token granted or revocation floor set on this key before it`;
  }

  private renew(s: KeyState, op: LockOp): StepResult<KeyState> {
    const a = op.answer;
    const h = s.holder;
    const mine = h !== null && h.session === op.session && this.presented(h, op.token, op.callAt);
    switch (a.type) {
      case 'unknown':
        return [s];
      case 'granted': {
        if (a.token !== op.token) return `renew of token ${op.token} answered token ${a.token}`;
        if (!h || !mine) {
          return `renewed token ${op.token} of session ${short(op.session)}, but ${h ? `the key was held by ${who(h)}` : 'the key was free'}`;
        }
        const r = resolved(s, a.token);
        const leaseFrom = Math.max(h.leaseFrom, op.callAt);
        return [{ ...r, holder: { ...r.holder!, leaseFrom } }];
      }
      case 'lock-lost':
        if (!h || !mine || h.token === null || this.mayBeGone(h, s, op)) return [s];
        return `answered LOCK_LOST to the live grant it renews: ${this.live(h)}`;
      case 'session-expired':
      case 'session-unknown':
        return this.sessionGone(s, op);
      default:
        return `renew cannot answer ${a.type}`;
    }
  }

  private release(s: KeyState, op: LockOp): StepResult<KeyState> {
    const a = op.answer;
    const h = s.holder;
    const matches = h !== null && this.presented(h, op.token, op.callAt);
    switch (a.type) {
      case 'unknown':
        return matches ? [s, freed(s, op.token)] : [s];
      case 'done':
        if (matches) return [freed(s, op.token)];
        return `released token ${op.token}, but ${h ? `the key was held by ${who(h)}` : 'the key was free'} (release compares on the token)`;
      case 'lock-lost':
        if (!h || !matches || h.token === null || this.mayBeGone(h, s, op)) return [s];
        return `answered LOCK_LOST to the release of the live grant: ${this.live(h)}`;
      default:
        return `release cannot answer ${a.type}`;
    }
  }

  private inspect(s: KeyState, op: LockOp): StepResult<KeyState> {
    const a = op.answer;
    const h = s.holder;
    switch (a.type) {
      case 'held':
        if (h && h.owner === a.owner && (a.token === null || mayBe(h, a.token))) {
          return [a.token === null ? s : resolved(s, a.token)];
        }
        return `L7 showed ${a.owner} holding token ${a.token ?? '(hidden)'}, but ${h ? `the key was held by ${who(h)}` : 'the key was free'}`;
      case 'free':
        if (!h || this.mayBeGone(h, s, op)) return [s];
        return `L7 showed the key free while it was held by ${this.live(h)}`;
      case 'unknown':
        return [s];
      case 'never-seen':
        if (!h && !s.granted) return [s];
        return `L7 answered NOT_FOUND (never acquired), but token ${s.floor} had been granted on it`;
      default:
        return `inspect cannot answer ${a.type}`;
    }
  }

  private revoke(s: KeyState, op: LockOp): StepResult<KeyState> {
    const a = op.answer;
    const h = s.holder;
    const expected = op.token;
    switch (a.type) {
      case 'unknown':
        if (!h || (expected !== null && !this.presented(h, expected, op.callAt))) return [s];
        return [s, { ...s, holder: null, floor: maxOf(s.floor, h.token), open: true }];
      case 'revoked':
        return this.revoked(s, op, a);
      case 'not-held':
        if (!h || this.mayBeGone(h, s, op)) return [s];
        return `L8 answered NOT_FOUND while the key was held by ${this.live(h)}`;
      case 'fenced-out':
        if (h && expected !== null && h.token !== expected) return [s];
        return h
          ? `L8 answered FENCED_OUT to expectedToken ${expected}, the live grant's own token`
          : 'L8 answered FENCED_OUT while no one held the key';
      default:
        return `revoke cannot answer ${a.type}`;
    }
  }

  private revoked(
    s: KeyState,
    op: LockOp,
    a: Extract<LockAnswer, { type: 'revoked' }>,
  ): StepResult<KeyState> {
    const h = s.holder;
    if (op.token !== null && op.token !== a.revokedToken) {
      return `L8 with expectedToken ${op.token} revoked token ${a.revokedToken}`;
    }
    if (!h || !mayBe(h, a.revokedToken)) {
      return `L8 revoked token ${a.revokedToken}, but ${h ? `the key was held by ${who(h)}` : 'the key was free'}`;
    }
    if (a.floor <= a.revokedToken || a.floor <= s.floor) {
      return `L8's new floor ${a.floor} is not above the revoked token ${a.revokedToken} and every token before it (${s.floor})`;
    }
    return [{ ...s, holder: null, floor: a.floor, open: false }];
  }

  /** L3 ends the session and frees its locks. */
  private close(s: KeyState, op: LockOp): StepResult<KeyState> {
    const session = op.session;
    if (session === null) return [s];
    switch (op.answer.type) {
      case 'unknown':
        return s.closed.includes(session) ? [s] : [s, closeOf(s, session)];
      case 'done':
        if (!s.closed.includes(session)) return [closeOf(s, session)];
        // L3 on an EXPIRED session answers 204 and leaves it EXPIRED (docs/lock-server.md,
        // "Session states"), so a second 204 is right when it may have lapsed first.
        if (this.ctx.clock.mayLapse(session, op.callAt, op.returnAt)) return [s];
        return `L3 answered 204 for session ${short(session)}, which was already closed`;
      case 'session-unknown':
      case 'session-expired':
        return [s];
      default:
        return `close cannot answer ${op.answer.type}`;
    }
  }

  private readonly keys = new WeakMap<KeyState, string>();

  keyOf(s: KeyState): string {
    const known = this.keys.get(s);
    if (known !== undefined) return known;
    const key = this.keyOfUncached(s);
    this.keys.set(s, key);
    return key;
  }

  private keyOfUncached(s: KeyState): string {
    const pending = s.pending.map((p) => `${pendingKey(p)}@${p.from}-${p.until}`).join(',');
    return `${this.coreKeyOf(s, true)}\u0002${pending}`;
  }

  /** The state without its pending effects (and, unless `withLease`, without when the lease started). */
  private coreKeyOf(s: KeyState, withLease: boolean): string {
    const h = s.holder;
    const lease = withLease && h ? `\u0001${h.leaseFrom}` : '';
    const holder = h
      ? `${h.owner}\u0001${h.session}\u0001${h.token ?? `>${h.above}`}${lease}\u0001${h.leaseMs}`
      : '-';
    return `${holder}\u0002${s.floor}${s.open ? '+' : ''}${s.granted ? 'g' : ''}\u0002${s.closed.join(',')}`;
  }

  /**
   * Drops every state another state of the set allows everything of: the
   * same but for an earlier lease start (the model never needs a holder
   * alive, only possibly gone) and more pending effects, each with a window
   * at least as wide (a pending effect may also never happen). Keeps the
   * states of an outage, whose lost calls each may or may not have done
   * something, from multiplying.
   */
  reduce(states: KeyState[]): KeyState[] {
    if (states.length < 2) return states;
    const groups = new Map<string, KeyState[]>();
    for (const s of states) {
      const k = this.coreKeyOf(s, false);
      const group = groups.get(k);
      if (group) group.push(s);
      else groups.set(k, [s]);
    }
    const out: KeyState[] = [];
    for (const group of groups.values()) {
      // A state that subsumes another has at least as many pending effects: it is looked at first.
      group.sort((a, b) => b.pending.length - a.pending.length || leaseFrom(a) - leaseFrom(b));
      const kept: KeyState[] = [];
      for (const s of group) if (!kept.some((t) => subsumes(t, s))) kept.push(s);
      out.push(...kept);
    }
    return out;
  }
}

const leaseFrom = (s: KeyState) => s.holder?.leaseFrom ?? 0;

/** Whether `t` allows everything `s` does (same core state, see LockKeyModel.reduce). */
function subsumes(t: KeyState, s: KeyState): boolean {
  if (leaseFrom(t) > leaseFrom(s)) return false;
  return s.pending.every((p) =>
    t.pending.some(
      (q) => q.from <= p.from && q.until >= p.until && pendingKey(q) === pendingKey(p),
    ),
  );
}

/**
 * A session's own calls (L1–L3): closed is final; SESSION_EXPIRED needs a
 * possible lapse. `closeMayCome`: an L3 whose answer is unknown may close it
 * at any later moment.
 */
export interface SessionState {
  closed: boolean;
  closeMayCome: boolean;
}

export const SESSION_INITIAL: SessionState = { closed: false, closeMayCome: false };

export class SessionModel {
  constructor(private readonly ctx: ModelContext) {}

  step(s: SessionState, op: LockOp): StepResult<SessionState> {
    if (op.deferred) return op.kind === 'close' ? [{ ...s, closeMayCome: true }] : [s];
    const before = s.closeMayCome && !s.closed ? [s, { ...s, closed: true }] : [s];
    const out: SessionState[] = [];
    let why: string | null = null;
    for (const b of before) {
      const r = this.apply(b, op);
      if (typeof r === 'string') why ??= r;
      else out.push(...r);
    }
    return out.length > 0 ? out : (why ?? 'no state accepts this answer');
  }

  private apply(s: SessionState, op: LockOp): StepResult<SessionState> {
    const a = op.answer.type;
    const lapsed = () => this.ctx.clock.mayLapse(op.session, op.callAt, op.returnAt);
    if (op.kind === 'heartbeat') {
      if (a === 'done') return s.closed ? 'L2 answered 200 after the session was closed (L3)' : [s];
      if (a === 'session-expired' || a === 'session-unknown') {
        if (s.closed || lapsed()) return [s];
        return `L2 answered ${a === 'session-expired' ? 'SESSION_EXPIRED' : 'SESSION_UNKNOWN'} while the session was certainly alive (it proved life within its TTL throughout the call)`;
      }
      return [s];
    }
    if (op.kind === 'close') {
      if (a === 'unknown') return s.closed ? [s] : [s, { ...s, closed: true }];
      if (a === 'done') {
        // A second 204 is an EXPIRED session closed again (docs/lock-server.md, "Session states").
        if (s.closed && !lapsed()) return 'L3 answered 204 twice';
        return [{ ...s, closed: true }];
      }
      if (s.closed || lapsed()) return [s];
      return 'L3 answered SESSION_UNKNOWN for a live session';
    }
    return [s];
  }

  keyOf(s: SessionState): string {
    return `${s.closed ? 'closed' : 'open'}${s.closeMayCome ? '?' : ''}`;
  }
}
