import { counter, gauge, histogram } from '@dlock/metrics';
import { register, type Counter, type Histogram, type Registry } from 'prom-client';
import { DlockError, SESSION_STATES, type SessionState } from '@dlock/lock-api';

export type LockOp = 'acquire' | 'renew' | 'release' | 'revoke' | 'inspect';
export type SessionOp = 'open' | 'heartbeat' | 'close';

/** Source of the live-count gauges; replaced by the latest app instance (tests run several). */
export interface ActivitySource {
  activity?(): Promise<{ sessions: number; grants: number }>;
  sessionsByState?(): Promise<Record<SessionState, number>>;
  waiting(): number;
}

/** The result label: `ok`, or the contract code in lower case. Never a key or token (NFR-09). */
export function resultOf(error: unknown): string {
  return error instanceof DlockError ? error.code.toLowerCase() : 'internal';
}

let activitySource: ActivitySource | null = null;

/**
 * `lock_server_sessions{state}`: sessions by state (docs/lock-server.md, "Session states"),
 * read from the backend at scrape time. The label is the state, never an id (NFR-09).
 */
function sessionStateGauge(registry: Registry): void {
  gauge({
    name: 'lock_server_sessions',
    help: 'Sessions by state (ACTIVE, SUSPECT live; EXPIRED, CLOSED while retained)',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      const read = activitySource?.sessionsByState;
      if (!read) return;
      try {
        const counts = await read();
        for (const state of SESSION_STATES) this.set({ state: state.toLowerCase() }, counts[state]);
      } catch {
        // Backend unreachable: keep the last values rather than failing the scrape.
      }
    },
  });
}

/**
 * Lock-server metrics (docs/operations.md): per-operation counters and latency
 * histograms labelled by result, and gauges of live sessions, live grants
 * and waiting acquires.
 */
export class LockMetrics {
  private readonly latency: Histogram<'op' | 'result'>;
  private readonly counters: Record<Exclude<LockOp, 'inspect'>, Counter<'result'>>;
  private readonly sessionOps: Counter<'op' | 'result'>;

  constructor(source: ActivitySource, registry: Registry = register) {
    activitySource = source;
    const opCounter = (op: string) =>
      counter({
        name: `lock_server_${op}_total`,
        help: `Lock ${op} requests by result`,
        labelNames: ['result'],
        registers: [registry],
      });
    this.counters = {
      acquire: opCounter('acquire'),
      renew: opCounter('renew'),
      release: opCounter('release'),
      revoke: opCounter('revoke'),
    };
    this.latency = histogram({
      name: 'lock_server_op_seconds',
      help: 'Lock-server operation latency by operation and result',
      labelNames: ['op', 'result'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    });
    this.sessionOps = counter({
      name: 'lock_server_session_ops_total',
      help: 'Session operations by operation and result',
      labelNames: ['op', 'result'],
      registers: [registry],
    });
    const activityGauge = (
      name: string,
      help: string,
      read: (s: ActivitySource) => Promise<number>,
    ) =>
      gauge({
        name,
        help,
        registers: [registry],
        async collect() {
          if (!activitySource) return;
          try {
            this.set(await read(activitySource));
          } catch {
            // Backend unreachable: keep the last value rather than failing the scrape.
          }
        },
      });
    activityGauge('lock_server_active_sessions', 'Live sessions', async (s) =>
      s.activity ? (await s.activity()).sessions : 0,
    );
    activityGauge('lock_server_active_grants', 'Live lock grants', async (s) =>
      s.activity ? (await s.activity()).grants : 0,
    );
    sessionStateGauge(registry);
    activityGauge(
      'lock_server_waiting_acquires',
      'Acquires waiting server-side in this process',
      (s) => Promise.resolve(s.waiting()),
    );
  }

  /** Times `fn` and counts it by result. */
  async observe<T>(op: LockOp, fn: () => Promise<T>): Promise<T> {
    const end = this.latency.startTimer({ op });
    try {
      const value = await fn();
      this.count(op, 'ok');
      end({ result: 'ok' });
      return value;
    } catch (err) {
      const result = resultOf(err);
      this.count(op, result);
      end({ result });
      throw err;
    }
  }

  async session<T>(op: SessionOp, fn: () => Promise<T>): Promise<T> {
    try {
      const value = await fn();
      this.sessionOps.inc({ op, result: 'ok' });
      return value;
    } catch (err) {
      this.sessionOps.inc({ op, result: resultOf(err) });
      throw err;
    }
  }

  private count(op: LockOp, result: string): void {
    if (op !== 'inspect') this.counters[op].inc({ result });
  }
}
