import type {
  LockAnswer,
  LockOp,
  LockOpKind,
} from '../../src/checkers/linearizability/lock-op.model';

/**
 * Hand-written histories for the checker's tests: times in ms, `null` as the
 * return time for a call whose answer was lost (indeterminate).
 */
export class HistoryBuilder {
  readonly ops: LockOp[] = [];

  private add(
    kind: LockOpKind,
    [callAt, returnAt]: readonly [number, number | null],
    answer: LockAnswer,
    fields: Partial<LockOp>,
  ): this {
    this.ops.push({
      seq: this.ops.length,
      kind,
      key: null,
      owner: null,
      session: null,
      token: null,
      ttlMs: null,
      callAt,
      returnAt: returnAt ?? Infinity,
      answer: returnAt === null ? { type: 'unknown' } : answer,
      ...fields,
    });
    return this;
  }

  open(owner: string, session: string, at: readonly [number, number | null], ttlMs = 3_000) {
    return this.add('open', at, { type: 'done', ttlMs }, { owner, session });
  }

  heartbeat(session: string, at: readonly [number, number | null], answer: LockAnswer = DONE) {
    return this.add('heartbeat', at, answer, { session });
  }

  /** Heartbeats every `everyMs` from `fromMs` to `toMs`, each answered 5 ms later. */
  heartbeats(session: string, fromMs: number, toMs: number, everyMs = 1_000) {
    for (let t = fromMs; t <= toMs; t += everyMs) this.heartbeat(session, [t, t + 5]);
    return this;
  }

  close(owner: string, session: string, at: readonly [number, number | null], answer = DONE) {
    return this.add('close', at, answer, { owner, session });
  }

  acquire(
    key: string,
    owner: string,
    session: string,
    at: readonly [number, number | null],
    answer: LockAnswer,
    ttlMs: number | null = 6_000,
  ) {
    return this.add('acquire', at, answer, { key, owner, session, ttlMs });
  }

  renew(
    key: string,
    owner: string,
    session: string,
    token: bigint,
    at: readonly [number, number | null],
    answer: LockAnswer,
  ) {
    return this.add('renew', at, answer, { key, owner, session, token });
  }

  release(
    key: string,
    owner: string,
    token: bigint,
    at: readonly [number, number | null],
    answer: LockAnswer = DONE,
  ) {
    return this.add('release', at, answer, { key, owner, token });
  }

  inspect(key: string, at: readonly [number, number | null], answer: LockAnswer) {
    return this.add('inspect', at, answer, { key, owner: 'reader' });
  }

  revoke(
    key: string,
    expectedToken: bigint | null,
    at: readonly [number, number | null],
    answer: LockAnswer,
  ) {
    return this.add('revoke', at, answer, { key, owner: 'operator', token: expectedToken });
  }
}

export const DONE: LockAnswer = { type: 'done' };

/** An acquire or renew 200 for `owner` on `session`. */
export function granted(
  token: bigint,
  owner: string,
  session: string,
  leaseMs = 6_000,
): LockAnswer {
  return { type: 'granted', token, owner, session, leaseMs };
}
