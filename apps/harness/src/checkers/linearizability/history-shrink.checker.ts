import { performance } from 'node:perf_hooks';
import { isDefinite, isNoOpWhenUnknown, type LockOp } from './lock-op.model';
import {
  searchLinearization,
  type SearchBudget,
  type SearchModel,
  type SearchOutcome,
} from './linearization-search.checker';

export interface ShrinkLimits {
  /** Searches the shrink may run. */
  checksMax: number;
  /** performance.now() after which it stops and reports what it has. */
  deadlineAt: number;
  /** The budget of one search (its deadline is capped by `deadlineAt`). */
  search: Omit<SearchBudget, 'deadlineAt'> & { timeMaxMs: number };
}

export interface Core {
  /** The calls whose answers cannot all be true, in call order. */
  core: LockOp[];
  /** The history the core was proven on: the core, every other call taken as unknown. */
  history: LockOp[];
  /** False when the limits stopped the shrink early (the core is then valid, not minimal). */
  minimal: boolean;
  outcome: Extract<SearchOutcome, { kind: 'violation' }>;
  checks: number;
}

/**
 * Forgetting a call's answer (it still ran when it ran, with whatever effect
 * the model allows, or none) only ever allows more: the real answer is one of
 * the possibilities. So a history that still fails with some answers
 * forgotten has a genuine violation among the answers kept. Unlike dropping a
 * call, this cannot invent one (a forgotten release may still have freed the key).
 */
function relax(ops: readonly LockOp[], kept: Uint8Array): LockOp[] {
  const out: LockOp[] = [];
  ops.forEach((op, i) => {
    if (kept[i] || !isDefinite(op)) out.push(op);
    else if (!isNoOpWhenUnknown(op.kind)) out.push({ ...op, answer: { type: 'unknown' } });
  });
  return out;
}

/**
 * A small set of answers that cannot all be true (docs/harness.md, "Reading a
 * violation"): first forget every answer after the latest call still needed,
 * then every answer before the earliest, then chunks and single answers in
 * between (delta debugging), while the history still fails. Bounded by
 * `limits`; an unfinished search counts as "does not fail" (the answer stays).
 * `modelFor` builds the model of each history tried (what it knows depends on
 * which answers are kept).
 */
export async function shrinkToCore<S>(
  ops: readonly LockOp[],
  modelFor: (history: readonly LockOp[]) => SearchModel<S, LockOp>,
  limits: ShrinkLimits,
): Promise<Core | null> {
  const defs = ops
    .map((op, i) => ({ op, i }))
    .filter(({ op }) => isDefinite(op))
    .sort((a, b) => a.op.callAt - b.op.callAt)
    .map(({ i }) => i);
  const kept = new Uint8Array(ops.length).fill(1);
  let checks = 0;
  const found: { last: Extract<SearchOutcome, { kind: 'violation' }> | null } = { last: null };
  let stopped = false;
  const fails = async (): Promise<boolean> => {
    if (checks >= limits.checksMax || performance.now() > limits.deadlineAt) {
      stopped = true;
      return false;
    }
    checks++;
    const deadlineAt = Math.min(limits.deadlineAt, performance.now() + limits.search.timeMaxMs);
    const history = relax(ops, kept);
    const r = await searchLinearization(history, modelFor(history), {
      ...limits.search,
      deadlineAt,
    });
    if (r.kind === 'violation') found.last = r;
    return r.kind === 'violation';
  };
  const setRange = (from: number, to: number, v: 0 | 1) => {
    for (let d = from; d < to; d++) kept[defs[d]] = v;
  };
  if (!(await fails())) return null;
  // The latest answer needed: forget everything from k on.
  let lo = 0;
  let hi = defs.length;
  while (lo < hi && !stopped) {
    const mid = (lo + hi) >>> 1;
    setRange(mid, defs.length, 0);
    if (await fails()) hi = mid;
    else lo = mid + 1;
    setRange(mid, defs.length, 1);
  }
  const end = hi;
  setRange(end, defs.length, 0);
  // The earliest answer needed: forget everything before j.
  lo = 0;
  hi = end;
  while (lo < hi && !stopped) {
    const mid = (lo + hi + 1) >>> 1;
    setRange(0, mid, 0);
    if (await fails()) lo = mid;
    else hi = mid - 1;
    setRange(0, mid, 1);
  }
  setRange(0, lo, 0);
  await dropChunks(defs.slice(lo, end), kept, fails, () => stopped);
  // Every relaxation kept was proven by a failing search, the last of which ran on this very set.
  const proven = found.last;
  if (!proven) return null;
  const core = ops.filter((op, i) => kept[i] && isDefinite(op)).sort((a, b) => a.callAt - b.callAt);
  return { core, history: relax(ops, kept), minimal: !stopped, outcome: proven, checks };
}

/** Delta debugging over what is left: halves, quarters ... single answers. */
async function dropChunks(
  candidates: number[],
  kept: Uint8Array,
  fails: () => Promise<boolean>,
  stopped: () => boolean,
): Promise<void> {
  for (let size = Math.ceil(candidates.length / 2); size >= 1 && !stopped();) {
    for (let at = 0; at < candidates.length && !stopped(); at += size) {
      const chunk = candidates.slice(at, at + size).filter((i) => kept[i]);
      if (chunk.length === 0) continue;
      for (const i of chunk) kept[i] = 0;
      if (!(await fails())) for (const i of chunk) kept[i] = 1;
    }
    size = size === 1 ? 0 : Math.ceil(size / 2);
  }
}
