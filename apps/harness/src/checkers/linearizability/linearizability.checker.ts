import { performance } from 'node:perf_hooks';
import type { LockCall } from '../../infra/lock-recorder.infra';
import {
  KEY_INITIAL,
  LockKeyModel,
  SESSION_INITIAL,
  SessionModel,
  type KeyState,
  type ModelContext,
  type SessionState,
} from './lock.model';
import {
  deferIndeterminate,
  isDefinite,
  isIndeterminate,
  isNoOpWhenUnknown,
  toLockOps,
  type LockOp,
} from './lock-op.model';
import {
  searchLinearization,
  type SearchBudget,
  type SearchModel,
} from './linearization-search.checker';
import { SessionClock } from './session-clock.model';
import { shrinkToCore } from './history-shrink.checker';

/** Limits and knobs of a check (docs/harness.md, "Linearizability"). */
export interface LinearizabilityOptions {
  /** The whole check; partitions not reached in time are reported undecided. */
  timeMaxMs?: number;
  /** One partition's search. */
  partitionTimeMaxMs?: number;
  partitionStepsMax?: number;
  cacheBytesMax?: number;
  stateSetMax?: number;
  /** Explaining one violation: searches and time. */
  shrinkChecksMax?: number;
  shrinkTimeMaxMs?: number;
  /** Taken off every lease and session TTL (server timer granularity, clock slew). */
  expirySlackMs?: number;
  /** How long after it was sent (and its own wait) a call whose answer was lost may still take effect. */
  effectWindowMs?: number;
  /** Only these keys (and the sessions that touched them) are checked. */
  keyFilter?: (key: string) => boolean;
}

const DEFAULTS = {
  timeMaxMs: 45_000,
  partitionTimeMaxMs: 20_000,
  partitionStepsMax: 20_000_000,
  cacheBytesMax: 256 * 2 ** 20,
  stateSetMax: 256,
  shrinkChecksMax: 400,
  shrinkTimeMaxMs: 15_000,
  expirySlackMs: 100,
  effectWindowMs: 10_000,
} satisfies Required<Omit<LinearizabilityOptions, 'keyFilter'>>;

/** A partition whose history cannot be linearized, with the answers that cannot all be true. */
export interface LinearizabilityViolation {
  /** `lock <key>` or `session <id>`. */
  partition: string;
  /** The calls of the partition. */
  ops: number;
  /** The smallest set of answers found that cannot all be true (other calls taken as unknown). */
  core: LockOp[];
  /** False when the shrink's limits stopped it before it was done. */
  minimal: boolean;
  /** The model's reason at the furthest point any order reached, when it gives one. */
  why: string | null;
  /** The core, one line per call, then the reason. */
  lines: string[];
}

export interface LinearizabilityReport {
  verdict: 'ok' | 'violation' | 'undecided';
  /** Recorded calls looked at, and how many of them the model used. */
  calls: number;
  ops: number;
  indeterminate: number;
  keys: number;
  sessions: number;
  violations: LinearizabilityViolation[];
  undecided: Array<{ partition: string; reason: string }>;
  /** Why the verdict may be weaker than it looks (calls not recorded, answers not readable). */
  notes: string[];
  durationMs: number;
}

interface Partition {
  name: string;
  ops: LockOp[];
  kind: 'lock' | 'session';
}

const byCall = (a: LockOp, b: LockOp) => a.callAt - b.callAt || a.seq - b.seq;

/** P-compositionality: one history per key (plus L3 of its sessions), one per session; in call order. */
function partitionsOf(ops: readonly LockOp[], keyFilter?: (key: string) => boolean): Partition[] {
  const byKey = new Map<string, LockOp[]>();
  const sessionsOfKey = new Map<string, Set<string>>();
  const bySession = new Map<string, LockOp[]>();
  for (const op of ops) {
    if (op.key !== null) {
      if (keyFilter && !keyFilter(op.key)) continue;
      const list = byKey.get(op.key) ?? [];
      list.push(op);
      byKey.set(op.key, list);
      const sessions = sessionsOfKey.get(op.key) ?? new Set<string>();
      if (op.session !== null) sessions.add(op.session);
      if (op.answer.type === 'granted') sessions.add(op.answer.session);
      sessionsOfKey.set(op.key, sessions);
    } else if (op.session !== null) {
      const list = bySession.get(op.session) ?? [];
      list.push(op);
      bySession.set(op.session, list);
    }
  }
  const touched = new Set<string>();
  const out: Partition[] = [];
  for (const [key, list] of byKey) {
    const sessions = sessionsOfKey.get(key) ?? new Set<string>();
    const closes = [...sessions].flatMap((s) =>
      (bySession.get(s) ?? []).filter((op) => op.kind === 'close'),
    );
    sessions.forEach((s) => touched.add(s));
    const ops = deferIndeterminate([...list, ...closes].sort(byCall));
    out.push({ name: `lock ${key}`, ops, kind: 'lock' });
  }
  for (const [session, list] of bySession) {
    if (keyFilter && !touched.has(session)) continue;
    out.push({
      name: `session ${session}`,
      ops: deferIndeterminate(list.sort(byCall)),
      kind: 'session',
    });
  }
  return out;
}

/** The lock model of one key's history: when its sessions are last used, when its tokens were first shown. */
function lockModelFor(ctx: ModelContext, ops: readonly LockOp[]): SearchModel<KeyState, LockOp> {
  const lastUse = new Map<string, number>();
  for (const op of ops) {
    // A deferred call only registers (at its send time) an effect, which a closed session drops.
    const until = op.deferred ? op.callAt : op.returnAt;
    const named = [op.session, op.answer.type === 'granted' ? op.answer.session : null];
    for (const s of named) if (s !== null) lastUse.set(s, Math.max(lastUse.get(s) ?? 0, until));
  }
  const revealedAt = new Map<bigint, number>();
  for (const op of ops) {
    const a = op.answer;
    const shown =
      a.type === 'granted'
        ? a.token
        : a.type === 'held'
          ? a.token
          : a.type === 'revoked'
            ? a.revokedToken
            : null;
    if (shown !== null && op.returnAt < (revealedAt.get(shown) ?? Infinity)) {
      revealedAt.set(shown, op.returnAt);
    }
  }
  const lock = new LockKeyModel(ctx, lastUse, revealedAt);
  return {
    initial: [KEY_INITIAL],
    step: (s, op) => lock.step(s, op),
    keyOf: (s) => lock.keyOf(s),
    reduce: (states) => lock.reduce(states),
    expand: (states, op) => lock.expand(states, op),
  };
}

function sessionModelFor(ctx: ModelContext): SearchModel<SessionState, LockOp> {
  const session = new SessionModel(ctx);
  return {
    initial: [SESSION_INITIAL],
    step: (s, op) => session.step(s, op),
    keyOf: (s) => session.keyOf(s),
  };
}

/** The checker over what a LockRecorder captured (docs/harness.md, "Linearizability"). */
export async function checkRecordedLockHistory(
  recorded: { calls: readonly LockCall[]; callsDropped: number },
  options: LinearizabilityOptions = {},
): Promise<LinearizabilityReport> {
  // A snapshot: calls still in flight stay pending (indeterminate) in it.
  const calls = recorded.calls.map((c) => ({ ...c }));
  const converted = toLockOps(calls);
  const report = await checkLockHistory(converted.ops, options);
  report.calls = calls.length;
  if (converted.unreadable > 0) {
    report.notes.push(
      `${converted.unreadable} success answers could not be read (taken as unknown)`,
    );
  }
  if (recorded.callsDropped > 0) {
    report.notes.push(`${recorded.callsDropped} calls were not recorded (history limit)`);
    if (report.verdict === 'ok') report.verdict = 'undecided';
  }
  return report;
}

/** The checker over model operations (hand-written histories, or converted calls). */
export async function checkLockHistory(
  ops: readonly LockOp[],
  options: LinearizabilityOptions = {},
): Promise<LinearizabilityReport> {
  const o = { ...DEFAULTS, ...options };
  const t0 = performance.now();
  const deadline = t0 + o.timeMaxMs;
  const start = ops.reduce((m, op) => Math.min(m, op.callAt), Infinity);
  const ctx: ModelContext = {
    clock: new SessionClock(ops, o.expirySlackMs),
    slackMs: o.expirySlackMs,
    effectWindowMs: o.effectWindowMs,
    at: (ms) => at(ms, start),
  };
  const sessionModel = sessionModelFor(ctx);
  // A lost L1, L2, L5 or L7 constrains nothing (isNoOpWhenUnknown).
  const useful = ops.filter((op) => !(isIndeterminate(op) && isNoOpWhenUnknown(op.kind)));
  const partitions = partitionsOf(useful, options.keyFilter);
  const report: LinearizabilityReport = {
    verdict: 'ok',
    calls: ops.length,
    ops: partitions.reduce((n, p) => n + p.ops.length, 0),
    indeterminate: ops.filter(isIndeterminate).length,
    keys: partitions.filter((p) => p.kind === 'lock').length,
    sessions: partitions.filter((p) => p.kind === 'session').length,
    violations: [],
    undecided: [],
    notes: [],
    durationMs: 0,
  };
  // Large partitions first: they are the ones that may need the budget.
  partitions.sort((a, b) => b.ops.length - a.ops.length);
  for (const p of partitions) {
    if (performance.now() > deadline) {
      report.undecided.push({ partition: p.name, reason: 'the whole-check time budget ran out' });
      continue;
    }
    const budget: SearchBudget = {
      stepsMax: o.partitionStepsMax,
      cacheBytesMax: o.cacheBytesMax,
      stateSetMax: o.stateSetMax,
      deadlineAt: Math.min(deadline, performance.now() + o.partitionTimeMaxMs),
    };
    const lockModel = p.kind === 'lock' ? lockModelFor(ctx, p.ops) : null;
    const outcome = lockModel
      ? await searchLinearization(p.ops, lockModel, budget)
      : await searchLinearization(p.ops, sessionModel, budget);
    if (outcome.kind === 'undecided') {
      report.undecided.push({ partition: p.name, reason: outcome.reason });
    } else if (outcome.kind === 'violation') {
      const limits = {
        checksMax: o.shrinkChecksMax,
        deadlineAt: performance.now() + o.shrinkTimeMaxMs,
        search: { ...budget, timeMaxMs: Math.min(o.partitionTimeMaxMs, 5_000) },
      };
      const core = lockModel
        ? await shrinkToCore(p.ops, (history) => lockModelFor(ctx, history), limits)
        : await shrinkToCore(p.ops, () => sessionModel, limits);
      report.violations.push(violationOf(p, core, start));
    }
  }
  report.verdict =
    report.violations.length > 0 ? 'violation' : report.undecided.length > 0 ? 'undecided' : 'ok';
  report.durationMs = Math.round(performance.now() - t0);
  return report;
}

function violationOf(
  p: Partition,
  core: Awaited<ReturnType<typeof shrinkToCore>>,
  start: number,
): LinearizabilityViolation {
  // Without a core (the shrink could not even re-prove it in its budget) the whole history is the evidence.
  const calls = core ? core.core : p.ops.filter(isDefinite);
  const blocked = core?.outcome.blocked ?? null;
  const why = blocked?.reason ?? null;
  const lines = calls.map((op) => describeOp(op, start));
  const others = p.ops.length - calls.length;
  lines.push(
    `why: ${why ?? 'no order of these calls is consistent with the model'}` +
      (others > 0 ? ` (the other ${others} calls of this history taken as unknown)` : ''),
  );
  if (core && !core.minimal)
    lines.push('(the shrink stopped at its limits: this set may not be minimal)');
  return {
    partition: p.name,
    ops: p.ops.length,
    core: calls,
    minimal: core?.minimal ?? false,
    why,
    lines,
  };
}

function at(ms: number, start: number): string {
  if (!Number.isFinite(ms)) return '∞';
  return `+${((ms - start) / 1000).toFixed(3)} s`;
}

const short = (id: string | null) => (id === null ? '?' : id.slice(0, 8));

/** One call as an explanation shows it: when, who, what was asked, what came back. */
export function describeOp(op: LockOp, start: number): string {
  const when = `${at(op.callAt, start)}..${op.deferred ? '∞' : at(op.returnAt, start)}`;
  const who = `${op.owner ?? '?'}${op.session === null ? '' : ` [session ${short(op.session)}]`}`;
  const asked =
    op.kind === 'revoke'
      ? op.token !== null
        ? ` expectedToken ${op.token}`
        : ''
      : op.token !== null
        ? ` token ${op.token}`
        : '';
  const target = op.key !== null ? ` ${op.key}` : '';
  return `#${op.seq} ${when} ${who} ${op.kind}${target}${asked} → ${answerText(op)}`;
}

function answerText(op: LockOp): string {
  const a = op.answer;
  switch (a.type) {
    case 'unknown':
      return 'no answer (lost, pending or 5xx)';
    case 'granted':
      return `200 token ${a.token} (lease ${a.leaseMs} ms)`;
    case 'contended':
      return '409 LOCK_CONTENDED';
    case 'lock-lost':
      return '409 LOCK_LOST';
    case 'session-expired':
      return '410 SESSION_EXPIRED';
    case 'session-unknown':
      return '404 SESSION_UNKNOWN';
    case 'done':
      return op.kind === 'open' ? '201' : op.kind === 'heartbeat' ? '200' : '204';
    case 'held':
      return `200 held by ${a.owner}, token ${a.token ?? '(hidden)'}`;
    case 'free':
      return '200 not held';
    case 'never-seen':
    case 'not-held':
      return '404 NOT_FOUND';
    case 'revoked':
      return `200 revoked token ${a.revokedToken}, new floor ${a.floor}`;
    case 'fenced-out':
      return '409 FENCED_OUT';
  }
}

/** The one line reports carry: "linearizability: ok …" or "linearizability: violation (…)". */
export function linearizabilityLine(r: LinearizabilityReport): string {
  const seconds = (r.durationMs / 1000).toFixed(1);
  switch (r.verdict) {
    case 'ok':
      return (
        `linearizability: ok (${r.ops} calls on ${r.keys} keys and ${r.sessions} sessions, ` +
        `${r.indeterminate} indeterminate, checked in ${seconds} s)`
      );
    case 'violation': {
      const v = r.violations[0];
      const more = r.violations.length > 1 ? `; and ${r.violations.length - 1} more` : '';
      return `linearizability: violation (${v.partition}: ${v.core.length} calls cannot be ordered: ${v.why ?? 'no consistent order'}${more})`;
    }
    case 'undecided':
      return `linearizability: undecided (${r.undecided.map((u) => `${u.partition}: ${u.reason}`).join('; ') || r.notes.join('; ')})`;
  }
}

/** The verdict line, then each violation's calls and reason, then what could not be decided. */
export function describeLinearizability(r: LinearizabilityReport): string[] {
  const lines = [linearizabilityLine(r)];
  for (const v of r.violations) {
    lines.push(`  ${v.partition} (${v.ops} calls; these cannot all be true):`);
    for (const l of v.lines) lines.push(`    ${l}`);
  }
  for (const u of r.undecided.slice(0, 10)) lines.push(`  undecided ${u.partition}: ${u.reason}`);
  for (const n of r.notes) lines.push(`  note: ${n}`);
  return lines;
}
