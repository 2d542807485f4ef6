import { Logger } from '@nestjs/common';
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import type { DataSource } from 'typeorm';
import { DlockError } from '@dlock/lock-api';
import { probeNewConnection, sqlRows } from '@dlock/persistence';
import type { LockServerConfig } from '../../../config';
import { isConnectTimeout, isUnavailable } from './pg.errors';
import { GRACE_SQL, PROBE_SQL, REAP_SESSIONS_SQL } from './pg-locks.sql';
import type { TokenHighWater } from './token-high-water.repository';

interface ProbeRow {
  in_recovery: boolean;
  read_only: boolean;
  token_source: string;
}

const REAP_INTERVAL_MS = 60_000;

/**
 * The pg backend's only door to the database. It runs one statement at a
 * time and owns the availability rule:
 * - a connection fault, a read-only or standby database, or a statement
 *   timeout answers 503 NOT_LEADER: nothing was decided, and a grant whose
 *   commit we cannot confirm is never reported as granted;
 * - once an outage was seen, every request answers NOT_LEADER until the
 *   database is writable again AND the grace statement (docs/lock-server.md) ran: every
 *   session alive when the outage began, and its leases, get one full TTL
 *   from now, so a failover does not mass-evict the holders;
 * - a database whose fencing_token_seq is behind a token this process already
 *   handed out (an asynchronous standby promoted, a restore) is not the
 *   database the grants came from: it answers NOT_LEADER like an outage, and
 *   `token_regression` is reported, until an operator moves the sequence on
 *   (docs/operations.md, "lockdb failover").
 * Outages are detected by failing requests and by a background probe
 * (LOCKDB_PROBE_INTERVAL_MS), so a quiet server notices them too. A connect
 * timeout that this process's own busy event loop caused (the database's
 * answer arrived but was not read in time) is no outage: the statement is
 * tried once more instead (docs/lock-server.md, "Limits").
 */
export class PgDatabase {
  private readonly logger = new Logger('lockdb');
  private outageSinceMs: number | null = null;
  private recovering: Promise<void> | null = null;
  private probeTimer: NodeJS.Timeout | null = null;
  private reapTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly ds: DataSource,
    private readonly config: LockServerConfig,
    private readonly highWater: TokenHighWater,
  ) {}

  /** A token lockdb minted and returned (a grant's or a revocation floor). */
  issued(token: bigint): void {
    this.highWater.issued(token);
  }

  start(): void {
    this.probeTimer = setInterval(() => void this.probe(), this.config.LOCKDB_PROBE_INTERVAL_MS);
    this.probeTimer.unref();
    this.reapTimer = setInterval(() => void this.reap(), REAP_INTERVAL_MS);
    this.reapTimer.unref();
  }

  /** Stops the probe and the reaper; the pool itself is DatabaseModule's to close. */
  stop(): void {
    if (this.probeTimer) clearInterval(this.probeTimer);
    if (this.reapTimer) clearInterval(this.reapTimer);
  }

  get available(): boolean {
    return this.outageSinceMs === null;
  }

  /** Runs one statement and returns its rows; NOT_LEADER when the database cannot decide. */
  async rows<T>(sql: string, params: unknown[] = []): Promise<T[]> {
    if (this.outageSinceMs !== null) {
      await this.recover();
      if (this.outageSinceMs !== null) throw this.notLeader();
    }
    return this.raw<T>(sql, params);
  }

  /**
   * Throws NOT_LEADER unless the database answers and accepts writes, and a
   * new connection authenticates: pooled sessions outlive a password change
   * or a server refusing new sessions, and the pool replaces them as they
   * close (docs/operations.md, "Containers, start-up and database outages").
   */
  async ping(): Promise<void> {
    const before = this.highWater.mark();
    this.assertWritable(await this.rows<ProbeRow>(PROBE_SQL), before);
    try {
      await probeNewConnection(this.ds);
    } catch (err) {
      throw this.notLeader(err);
    }
  }

  /**
   * One statement, prepared, straight on the pool (sqlRows of
   * @dlock/persistence: poolOf, no TypeORM query runner). Every statement here
   * is a single autocommit statement, so the runner's own checkout, subscriber
   * broadcast and result wrapping added nothing but per-request CPU on the hot
   * path (bench/reports/lock-server-pg.md).
   */
  private async raw<T>(sql: string, params: unknown[]): Promise<T[]> {
    const startedMs = performance.now();
    for (;;) {
      const loopBefore = performance.eventLoopUtilization();
      try {
        return await sqlRows<T>(this.ds, sql, params);
      } catch (err) {
        // A connect that timed out sent nothing: trying again cannot apply the statement twice.
        const again =
          this.busyLoopTimedOut(err, loopBefore) &&
          performance.now() - startedMs < this.config.LOCKDB_STATEMENT_TIMEOUT_MS;
        if (!again) throw this.failed(err);
      }
      this.logger.warn(
        { event: 'lockdb_connect_stalled' },
        'connect timed out while this process was busy: trying again',
      );
    }
  }

  /**
   * A connect timeout during which the event loop ran callbacks for at least
   * half of the connect budget: the timer fired late in our own stall, not
   * because the database did not answer. An unreachable database times out
   * with the loop idle, and stays an outage at once.
   */
  private busyLoopTimedOut(err: unknown, loopBefore: EventLoopUtilization): boolean {
    if (!isConnectTimeout(err)) return false;
    const { active } = performance.eventLoopUtilization(loopBefore);
    return active >= this.config.LOCKDB_CONNECT_TIMEOUT_MS / 2;
  }

  /** NOT_LEADER (and an outage begun) when the database cannot decide; else the statement's error. */
  private failed(err: unknown): unknown {
    if (!isUnavailable(err)) return err;
    this.markOutage(err);
    return this.notLeader(err);
  }

  /** `highestBefore`: the highest token issued when the probe was sent (TokenHighWater.mark). */
  private assertWritable(rows: ProbeRow[], highestBefore: bigint): void {
    const row = rows[0];
    if (!row || row.in_recovery || row.read_only) {
      this.markOutage(new Error('database is read-only or a standby'));
      throw this.notLeader();
    }
    if (this.highWater.behind(BigInt(row.token_source), highestBefore)) {
      this.markOutage(new Error('fencing_token_seq is behind a token already issued'));
      throw this.notLeader();
    }
  }

  private markOutage(cause: unknown): void {
    if (this.outageSinceMs !== null) return;
    this.outageSinceMs = performance.now();
    this.logger.warn(
      { event: 'lockdb_unavailable', err: cause instanceof Error ? cause.message : String(cause) },
      'lock database unavailable: answering NOT_LEADER',
    );
  }

  /** Single-flight: one recovery attempt at a time, shared by every waiting request. */
  private recover(): Promise<void> {
    if (!this.recovering) {
      this.recovering = this.tryRecover().finally(() => {
        this.recovering = null;
      });
    }
    return this.recovering;
  }

  private async tryRecover(): Promise<void> {
    const since = this.outageSinceMs;
    if (since === null) return;
    try {
      const before = this.highWater.mark();
      this.assertWritable(await this.raw<ProbeRow>(PROBE_SQL, []), before);
      // The outage may have begun up to one probe (plus its connect timeout) before we saw it.
      const outageMs = Math.ceil(
        performance.now() -
          since +
          this.config.LOCKDB_PROBE_INTERVAL_MS +
          this.config.LOCKDB_CONNECT_TIMEOUT_MS,
      );
      const [grace] = await this.raw<{ sessions: number; leases: number }>(GRACE_SQL, [
        Math.min(outageMs, 2_000_000_000),
      ]);
      this.outageSinceMs = null;
      this.logger.warn(
        {
          event: 'lockdb_recovered',
          outageMs,
          graceSessions: grace?.sessions,
          graceLeases: grace?.leases,
        },
        'lock database back: live sessions given one TTL of grace',
      );
    } catch (err) {
      if (!(err instanceof DlockError)) {
        this.logger.warn({ err: (err as Error).message }, 'lock database recovery attempt failed');
      }
    }
  }

  private async probe(): Promise<void> {
    if (this.outageSinceMs !== null) return this.recover();
    try {
      const before = this.highWater.mark();
      this.assertWritable(await this.raw<ProbeRow>(PROBE_SQL, []), before);
    } catch (err) {
      if (!(err instanceof DlockError)) this.markOutage(err);
    }
  }

  private async reap(): Promise<void> {
    if (this.outageSinceMs !== null) return;
    try {
      await this.raw(REAP_SESSIONS_SQL, [this.config.LOCK_SESSION_RETENTION_MS]);
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'expired-session reaping failed');
    }
  }

  private notLeader(cause?: unknown): DlockError {
    return new DlockError(
      'NOT_LEADER',
      'lock database unavailable or read-only; nothing was decided',
      {
        retryAfterMillis: this.config.LOCK_NOT_LEADER_RETRY_AFTER_MS,
        cause,
      },
    );
  }
}
