import { performance } from 'node:perf_hooks';
import { setImmediate as yieldToLoop } from 'node:timers/promises';

/** An operation's interval; returnAt = Infinity for one whose answer is unknown. */
export interface Timed {
  callAt: number;
  returnAt: number;
}

/** A model the search runs: nondeterministic (a step may lead to several states). */
export interface SearchModel<S, O extends Timed> {
  initial: readonly S[];
  /** The states after `op` answered as recorded, or why that answer is impossible. */
  step(state: S, op: O): S[] | string;
  /** Equal keys mean equal states. */
  keyOf(state: S): string;
  /** Optionally drops states another state of the set subsumes. */
  reduce?(states: S[]): S[];
  /** Optionally adds the states internal events may lead to before `op` (once per configuration). */
  expand?(states: S[], op: O): S[];
}

/** Limits of one search (docs/harness.md, "Budgets"). */
export interface SearchBudget {
  /** Model steps (one operation tried against one set of states). */
  stepsMax: number;
  /** Approximate memory of the visited-configuration cache. */
  cacheBytesMax: number;
  /** States one configuration may hold at once. */
  stateSetMax: number;
  /** performance.now() after which the search gives up. */
  deadlineAt: number;
}

export type SearchOutcome =
  | { kind: 'linearizable' }
  | {
      kind: 'violation';
      /** How many operations the longest partial linearization ordered. */
      deepest: number;
      /** The operation that could not come next there, and why, when the model says. */
      blocked: { index: number; reason: string | null } | null;
    }
  | { kind: 'undecided'; reason: string };

/** A set of model states reached by one partial linearization. */
interface Config<S> {
  states: S[];
  key: string;
}

const NONE = -1;
/** Time slices between which the search lets the event loop run (the recorder shares it). */
const SLICE_MS = 25;
const CHECK_EVERY_STEPS = 256;

/** A limit was reached (by the search, or by a model step): the outcome is "undecided". */
export class LimitExceeded extends Error {}

/**
 * The Wing & Gong search with Lowe's memoisation, as Porcupine runs it
 * (docs/harness.md, "Linearizability"): call and return events in time order
 * in a doubly linked list; the search linearizes the earliest pending call
 * whose answer the model accepts, lifts it out, and backtracks when it meets a
 * return whose call is still pending. A (linearized set, states) pair already
 * visited is never explored again. No recursion: an explicit stack.
 */
export class LinearizationSearch<S, O extends Timed> {
  private readonly n: number;
  private readonly opOf: Int32Array;
  private readonly isCall: Uint8Array;
  private readonly match: Int32Array;
  private readonly next: Int32Array;
  private readonly prev: Int32Array;
  private readonly head: number;
  private readonly bits: Uint32Array;
  /** Visited (linearized set, states) pairs, as `linearizedKey()|config key`. */
  private readonly cache = new Set<string>();
  private readonly stack: Array<{ entry: number; config: Config<S> }> = [];
  private config: Config<S>;
  private cursor: number;
  /** The lowest op index not linearized: the set is [0, firstOpen) plus the bits above it. */
  private firstOpen = 0;
  /** The highest bitset word ever written: nothing is set above it. */
  private topWord = 0;
  private cacheBytes = 0;
  private steps = 0;
  private deepest = -1;
  private blocked: { index: number; reason: string | null } | null = null;
  outcome: SearchOutcome | null = null;

  constructor(
    private readonly ops: readonly O[],
    private readonly model: SearchModel<S, O>,
    private readonly budget: SearchBudget,
  ) {
    // Ops must come in call order (see linearizedKey); entries are sorted by time below.
    this.n = ops.length;
    const m = 2 * this.n;
    const order = Array.from({ length: m }, (_, e) => e);
    // Entry e < n is the call of op e, entry n + i the return of op i.
    const time = (e: number) => (e < this.n ? ops[e].callAt : ops[e - this.n].returnAt);
    order.sort((a, b) => time(a) - time(b) || Number(a >= this.n) - Number(b >= this.n) || a - b);
    this.opOf = new Int32Array(m);
    this.isCall = new Uint8Array(m);
    this.match = new Int32Array(m);
    const posOf = new Int32Array(m);
    order.forEach((e, pos) => (posOf[e] = pos));
    order.forEach((e, pos) => {
      const call = e < this.n;
      this.opOf[pos] = call ? e : e - this.n;
      this.isCall[pos] = call ? 1 : 0;
      this.match[pos] = call ? posOf[e + this.n] : NONE;
    });
    this.head = m;
    this.next = new Int32Array(m + 1);
    this.prev = new Int32Array(m + 1);
    for (let i = 0; i < m; i++) {
      this.next[i] = i + 1 < m ? i + 1 : NONE;
      this.prev[i] = i === 0 ? this.head : i - 1;
    }
    this.next[this.head] = m > 0 ? 0 : NONE;
    this.prev[this.head] = NONE;
    this.cursor = this.next[this.head];
    this.bits = new Uint32Array(Math.ceil(this.n / 32) || 1);
    this.config = this.configOf([...model.initial]);
  }

  /** Runs for about `sliceMs`; the outcome once decided, else null (call again). */
  runSlice(sliceMs: number): SearchOutcome | null {
    if (this.outcome) return this.outcome;
    const sliceEnd = performance.now() + sliceMs;
    try {
      this.outcome = this.runUntil(sliceEnd);
    } catch (err) {
      if (!(err instanceof LimitExceeded)) throw err;
      this.outcome = { kind: 'undecided', reason: err.message };
    }
    if (this.outcome) this.cache.clear();
    return this.outcome;
  }

  private runUntil(sliceEnd: number): SearchOutcome | null {
    while (this.next[this.head] !== NONE) {
      if (++this.steps % CHECK_EVERY_STEPS === 0) {
        const now = performance.now();
        if (now > this.budget.deadlineAt) throw new LimitExceeded('time budget spent');
        if (this.steps > this.budget.stepsMax) throw new LimitExceeded('step budget spent');
        if (now > sliceEnd) return null;
      }
      const e = this.cursor;
      if (this.isCall[e]) {
        this.tryLinearize(e);
        continue;
      }
      // A return whose call is not linearized yet: this branch is dead, backtrack.
      this.noteDeepest(e);
      const top = this.stack.pop();
      if (!top) {
        return { kind: 'violation', deepest: this.deepest, blocked: this.blocked };
      }
      this.config = top.config;
      this.flip(this.opOf[top.entry]);
      this.unlift(top.entry);
      this.cursor = this.next[top.entry];
    }
    return { kind: 'linearizable' };
  }

  private tryLinearize(e: number): void {
    const i = this.opOf[e];
    const after = this.stepConfig(this.config, this.ops[i]);
    if (typeof after !== 'string') {
      this.flip(i);
      if (this.remember(after)) {
        this.stack.push({ entry: e, config: this.config });
        this.config = after;
        this.lift(e);
        this.cursor = this.next[this.head];
        return;
      }
      this.flip(i);
    }
    this.cursor = this.next[e];
  }

  private noteDeepest(returnEntry: number): void {
    if (this.stack.length <= this.deepest) return;
    this.deepest = this.stack.length;
    const index = this.opOf[returnEntry];
    const r = this.stepConfig(this.config, this.ops[index]);
    this.blocked = { index, reason: typeof r === 'string' ? r : null };
  }

  /** Every state of the configuration stepped by `op`; why not, when none accepts it. */
  private stepConfig(config: Config<S>, op: O): Config<S> | string {
    const found = new Map<string, S>();
    let why = '';
    const states = this.model.expand ? this.model.expand(config.states, op) : config.states;
    for (const s of states) {
      const r = this.model.step(s, op);
      if (typeof r === 'string') {
        why ||= r;
        continue;
      }
      for (const t of r) found.set(this.model.keyOf(t), t);
    }
    if (found.size === 0) return why || 'no state accepts this answer';
    return this.configOf([...found.values()]);
  }

  private configOf(states: S[]): Config<S> {
    const reduced = this.model.reduce ? this.model.reduce(states) : states;
    if (reduced.length > this.budget.stateSetMax) {
      throw new LimitExceeded(`more than ${this.budget.stateSetMax} states at once`);
    }
    const keys = reduced.map((s) => this.model.keyOf(s)).sort();
    return { states: reduced, key: keys.join('\u0003') };
  }

  /** Adds (linearized set, config) to the cache; false when it was there already. */
  private remember(config: Config<S>): boolean {
    const key = `${this.linearizedKey()}|${config.key}`;
    if (this.cache.has(key)) return false;
    this.cache.add(key);
    this.cacheBytes += key.length * 2 + 64;
    if (this.cacheBytes > this.budget.cacheBytesMax) {
      throw new LimitExceeded(`cache above ${Math.round(this.budget.cacheBytesMax / 2 ** 20)} MiB`);
    }
    return true;
  }

  /**
   * The linearized set, exactly and compactly: ops are indexed in call order
   * and the search linearizes them nearly in that order, so the set is a
   * prefix plus the few ops linearized ahead of it.
   */
  private linearizedKey(): string {
    const parts = [this.firstOpen.toString(36)];
    for (let w = this.firstOpen >>> 5; w <= this.topWord; w++) {
      for (let word = this.bits[w]; word !== 0; word &= word - 1) {
        const i = (w << 5) + (31 - Math.clz32(word & -word));
        if (i > this.firstOpen) parts.push(i.toString(36));
      }
    }
    return parts.join('.');
  }

  /** Toggles op i in the linearized set. */
  private flip(i: number): void {
    const w = i >>> 5;
    this.bits[w] ^= 1 << (i & 31);
    if (w > this.topWord) this.topWord = w;
    if (i < this.firstOpen) this.firstOpen = i;
    while (
      this.firstOpen < this.n &&
      this.bits[this.firstOpen >>> 5] & (1 << (this.firstOpen & 31))
    ) {
      this.firstOpen++;
    }
  }

  private lift(e: number): void {
    const { next, prev } = this;
    next[prev[e]] = next[e];
    prev[next[e]] = prev[e];
    const r = this.match[e];
    next[prev[r]] = next[r];
    if (next[r] !== NONE) prev[next[r]] = prev[r];
  }

  private unlift(e: number): void {
    const { next, prev } = this;
    const r = this.match[e];
    next[prev[r]] = r;
    if (next[r] !== NONE) prev[next[r]] = r;
    next[prev[e]] = e;
    prev[next[e]] = e;
  }
}

/** Runs a search to its outcome in slices, yielding to the event loop in between. */
export async function searchLinearization<S, O extends Timed>(
  ops: readonly O[],
  model: SearchModel<S, O>,
  budget: SearchBudget,
): Promise<SearchOutcome> {
  const search = new LinearizationSearch(ops, model, budget);
  for (;;) {
    const outcome = search.runSlice(SLICE_MS);
    if (outcome) return outcome;
    await yieldToLoop();
  }
}
