import { AssertionError } from 'node:assert';
import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import { DlockError } from '@dlock/lock-api';
import type {
  Etcd3,
  ICompare,
  IKeyValue,
  IRequestOp,
  IResponseOp,
  ITxnResponse,
  Watcher,
} from 'etcd3';
import { counter } from '@dlock/metrics';
import { createEtcdClient } from './etcd-client.factory';
import type { EtcdBackendSettings } from './etcd.config';
import { EtcdKeys, prefixEnd } from './etcd-keys.codec';

/** An absolute deadline (epoch ms) shared by every etcd call of one store operation. */
export type Deadline = number;

/** Whole-second etcd lease TTL for a requested duration: always rounded up (docs/contract.md). */
export function leaseSecondsFor(ttlMillis: number): number {
  return Math.max(1, Math.ceil(ttlMillis / 1000));
}

export interface GrantedLease {
  id: string;
  ttlSeconds: number;
}

const unavailableTotal = counter({
  name: 'lock_etcd_unavailable_total',
  help: 'etcd calls answered as NOT_LEADER (no leader, lost quorum, unreachable, deadline)',
});

/** Below etcd's default --max-txn-ops (128): a console read's per-item lookups are split to fit. */
const READ_OPS_PER_TXN_MAX = 120;
/** Lease TTL lookups of a console read in flight at once. */
const LEASE_LOOKUPS_IN_FLIGHT_MAX = 50;

/** Pause between re-sends, so a call that fails fast (no leader yet) does not spin. */
const RESEND_PAUSE_MS = 25;
/** Not worth another attempt with less of the operation's budget left than this. */
const RESEND_MIN_BUDGET_MS = 50;

const isNotLeader = (err: unknown) => err instanceof DlockError && err.code === 'NOT_LEADER';

/** The shared tombstone lease is replaced this often (a quarter of the retention, >= 15 s). */
function retentionRotateMs(retentionMs: number): number {
  return Math.max(15_000, Math.floor(retentionMs / 4));
}

/**
 * The etcd I/O of the backend: typed wrappers over KV txn, lease and watch
 * calls, each bounded by the operation's deadline, and the one mapping of
 * client faults to 503 NOT_LEADER (fail closed: nothing is granted on doubt).
 */
export class EtcdGateway implements OnApplicationShutdown {
  private readonly logger = new Logger('EtcdStore');
  readonly client: Etcd3;
  readonly keys: EtcdKeys;
  private retention: { lease: Promise<string>; grantedAt: number; id?: string } | null = null;

  constructor(readonly config: EtcdBackendSettings) {
    this.client = createEtcdClient(config);
    this.keys = new EtcdKeys(config.keyPrefix);
  }

  /** The deadline of a whole store operation (several etcd calls), inside docs/contract.md's 2 s. */
  deadline(): Deadline {
    return Date.now() + this.config.opTimeoutMs;
  }

  private callOptions(deadline: Deadline) {
    return { deadline: Math.min(deadline, Date.now() + this.config.callTimeoutMs) };
  }

  /** Every etcd fault becomes NOT_LEADER; contract errors and programming errors pass through. */
  unavailable(err: unknown): Error {
    if (err instanceof DlockError) return err;
    if (
      err instanceof TypeError ||
      err instanceof RangeError ||
      err instanceof ReferenceError ||
      err instanceof AssertionError
    ) {
      return err;
    }
    unavailableTotal.inc();
    this.logger.debug(`etcd unavailable: ${err instanceof Error ? err.message : String(err)}`);
    return new DlockError('NOT_LEADER', 'the etcd cluster cannot serve this request now', {
      retryAfterMillis: this.config.notLeaderRetryAfterMs,
      cause: err,
    });
  }

  /**
   * An idempotent call, sent again every ETCD_RESEND_AFTER_MS (and after a
   * fast failure) until etcd answers or the operation's deadline passes.
   * After a leader dies, a write its followers already forwarded to it hangs
   * until its deadline, while the same write sent again reaches the new
   * leader as soon as one is elected (docs/lock-server-etcd.md, failover).
   * Only for calls whose repeat is harmless: a create compared on revision 0,
   * a lease grant (a spare lease dies with its TTL), reads. `attempt` gets the
   * deadline of one attempt.
   */
  async resending<T>(deadline: Deadline, attempt: (until: Deadline) => Promise<T>): Promise<T> {
    for (;;) {
      try {
        return await attempt(Math.min(deadline, Date.now() + this.config.resendAfterMs));
      } catch (err) {
        if (!isNotLeader(err) || deadline - Date.now() < RESEND_MIN_BUDGET_MS + RESEND_PAUSE_MS) {
          throw err;
        }
        await new Promise((resolve) => setTimeout(resolve, RESEND_PAUSE_MS));
      }
    }
  }

  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw this.unavailable(err);
    }
  }

  txn(
    compare: ICompare[],
    success: IRequestOp[],
    failure: IRequestOp[],
    deadline: Deadline,
  ): Promise<ITxnResponse> {
    return this.call(() =>
      this.client.kv.txn({ compare, success, failure }, this.callOptions(deadline)),
    );
  }

  /** Several reads at one revision (a txn without compares). */
  async read(ops: IRequestOp[], deadline: Deadline): Promise<ITxnResponse> {
    return this.txn([], ops, [], deadline);
  }

  /**
   * Many reads, in as many txns as etcd's op limit needs (each txn is one
   * revision; the txns are not one snapshot together: advisory reads only).
   */
  async readMany(ops: IRequestOp[], deadline: Deadline): Promise<ITxnResponse[]> {
    const chunks: IRequestOp[][] = [];
    for (let i = 0; i < ops.length; i += READ_OPS_PER_TXN_MAX) {
      chunks.push(ops.slice(i, i + READ_OPS_PER_TXN_MAX));
    }
    return Promise.all(chunks.map((chunk) => this.read(chunk, deadline)));
  }

  /** Remaining whole seconds of each lease (etcd floors them); -1 for a lease etcd no longer has. */
  async leaseRemainingSeconds(leaseIds: string[], deadline: Deadline): Promise<number[]> {
    const out: number[] = [];
    for (let i = 0; i < leaseIds.length; i += LEASE_LOOKUPS_IN_FLIGHT_MAX) {
      const batch = leaseIds.slice(i, i + LEASE_LOOKUPS_IN_FLIGHT_MAX);
      const answers = await Promise.all(
        batch.map((ID) =>
          this.call(() =>
            this.client.leaseClient.leaseTimeToLive({ ID }, this.callOptions(deadline)),
          ),
        ),
      );
      out.push(...answers.map((a) => Number(a.TTL)));
    }
    return out;
  }

  /** One key as it was at a past revision (e.g. the revision of one's own write). */
  async getAt(key: Buffer, revision: string, deadline: Deadline): Promise<IKeyValue | undefined> {
    const res = await this.call(() =>
      this.client.kv.range({ key, revision }, this.callOptions(deadline)),
    );
    return res.kvs[0];
  }

  async grant(ttlSeconds: number, deadline: Deadline): Promise<GrantedLease> {
    const res = await this.call(() =>
      this.client.leaseClient.leaseGrant({ TTL: ttlSeconds, ID: 0 }, this.callOptions(deadline)),
    );
    if (res.error) throw this.unavailable(new Error(`lease grant refused: ${res.error}`));
    return { id: res.ID, ttlSeconds: Number(res.TTL) };
  }

  /** Revokes a lease (and deletes its keys). False when etcd no longer knows it. */
  async revoke(leaseId: string, deadline: Deadline): Promise<boolean> {
    try {
      await this.client.leaseClient.leaseRevoke({ ID: leaseId }, this.callOptions(deadline));
      return true;
    } catch (err) {
      if (err instanceof Error && err.message.includes('requested lease not found')) return false;
      throw this.unavailable(err);
    }
  }

  /** Revoke whose failure is harmless (the lease's own TTL reaps it): logged, never thrown. */
  async revokeQuietly(leaseId: string): Promise<void> {
    try {
      await this.revoke(leaseId, this.deadline());
    } catch (err) {
      this.logger.warn(`lease revoke failed (its TTL will reap it): ${String(err)}`);
    }
  }

  /**
   * One keep-alive: the remaining TTL in seconds, or 0 when the lease is gone.
   * A keep-alive is a stream, which etcd3's call policies do not cover: a
   * stream opened to a dead member fails after the fact, and the next one may
   * pick the same member again. Re-sending a keep-alive is harmless, so it is
   * re-sent like any idempotent call until a member answers or the deadline passes.
   */
  keepAliveOnce(leaseId: string, deadline: Deadline): Promise<number> {
    return this.resending(deadline, (until) =>
      this.call(() => this.keepAliveAttempt(leaseId, until)),
    );
  }

  private async keepAliveAttempt(leaseId: string, deadline: Deadline): Promise<number> {
    const stream = await this.client.leaseClient.leaseKeepAlive(this.callOptions(deadline));
    try {
      const res = await new Promise<{ TTL: string }>((resolve, reject) => {
        stream.on('data', resolve);
        stream.on('error', reject);
        stream.on('end', () => reject(new Error('lease keep-alive stream ended')));
        stream.write({ ID: leaseId });
      });
      return Math.max(0, Number(res.TTL));
    } finally {
      stream.end();
    }
  }

  /**
   * The shared lease session tombstones live on. Its TTL is the retention plus
   * one rotation, and a tombstone moves to the newest lease on heartbeat, so a
   * dead session is remembered for at least LOCK_SESSION_RETENTION_MS.
   */
  async retentionLease(deadline: Deadline): Promise<string> {
    const now = Date.now();
    const rotateMs = retentionRotateMs(this.config.sessionRetentionMs);
    if (!this.retention || now - this.retention.grantedAt > rotateMs) {
      const ttlSeconds = leaseSecondsFor(this.config.sessionRetentionMs + rotateMs);
      const lease = this.grant(ttlSeconds, deadline).then((l) => l.id);
      const entry: { lease: Promise<string>; grantedAt: number; id?: string } = {
        lease,
        grantedAt: now,
      };
      this.retention = entry;
      lease.then(
        (id) => (entry.id = id),
        () => {
          if (this.retention === entry) this.retention = null;
        },
      );
    }
    return this.retention.lease;
  }

  /** The newest tombstone lease if one is granted and still current (no I/O). */
  currentRetentionLease(): string | undefined {
    const r = this.retention;
    if (!r || Date.now() - r.grantedAt > retentionRotateMs(this.config.sessionRetentionMs)) {
      return undefined;
    }
    return r.id;
  }

  forgetRetentionLease(leaseId: string): void {
    void this.retention?.lease.then((id) => {
      if (id === leaseId) this.retention = null;
    });
  }

  /** Readiness: a linearizable read needs a leader and a quorum. */
  async ping(): Promise<void> {
    const deadline = Date.now() + this.config.readyTimeoutMs;
    await this.call(() =>
      this.client.kv.range(
        { key: this.keys.ping(), count_only: true },
        { deadline: Math.min(deadline, Date.now() + this.config.readyTimeoutMs) },
      ),
    );
  }

  /** Counts under two prefixes at one revision (the activity gauges). */
  async count(prefixes: Buffer[]): Promise<number[]> {
    const res = await this.read(prefixes.map(countPrefix), this.deadline());
    return prefixes.map((_, i) => countAt(res, i));
  }

  watchKey(key: Buffer, startRevision: string): Watcher {
    return this.client.watch().key(key).startRevision(startRevision).only('delete').watcher();
  }

  watchPrefixDeletes(prefix: Buffer): Watcher {
    return this.client.watch().prefix(prefix).only('delete').watcher();
  }

  onApplicationShutdown(): void {
    this.client.close();
  }
}

/* ---- request/response helpers -------------------------------------------------------------- */

export const createRevisionIs = (
  key: Buffer,
  result: 'Equal' | 'Greater' | 'Less' | 'NotEqual',
  value: string | number,
): ICompare => ({ key, target: 'Create', result, create_revision: value });

export const modRevisionIs = (key: Buffer, value: bigint): ICompare => ({
  key,
  target: 'Mod',
  result: 'Equal',
  mod_revision: value.toString(),
});

export const get = (key: Buffer): IRequestOp => ({ request_range: { key } });
export const countPrefix = (prefix: Buffer): IRequestOp => ({
  request_range: { key: prefix, range_end: prefixEnd(prefix), count_only: true },
});
export const listPrefix = (prefix: Buffer, limit?: number): IRequestOp => ({
  request_range: { key: prefix, range_end: prefixEnd(prefix), ...(limit ? { limit } : {}) },
});
export const put = (key: Buffer, value: Buffer, lease?: string): IRequestOp => ({
  request_put: { key, value, ...(lease === undefined ? {} : { lease }) },
});
export const del = (key: Buffer, prevKv = false): IRequestOp => ({
  request_delete_range: { key, prev_kv: prevKv },
});

export function rangeAt(res: ITxnResponse, index: number): IKeyValue[] {
  const op: IResponseOp | undefined = res.responses[index];
  return op?.response_range?.kvs ?? [];
}
/** Whether a range at `index` stopped at its limit with keys left over. */
export function moreAt(res: ITxnResponse, index: number): boolean {
  return res.responses[index]?.response_range?.more === true;
}
export function firstAt(res: ITxnResponse, index: number): IKeyValue | undefined {
  return rangeAt(res, index)[0];
}
export function countAt(res: ITxnResponse, index: number): number {
  return Number(res.responses[index]?.response_range?.count ?? '0');
}
export function deletedAt(res: ITxnResponse, index: number): IKeyValue[] {
  return res.responses[index]?.response_delete_range?.prev_kvs ?? [];
}
