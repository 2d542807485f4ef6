import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { startEtcdCluster, TcpProxy, type EtcdCluster } from '@dlock/testing';
import { AppProcess } from './infra/app-process.infra';
import { mergeLockHistories, type RecordedLockHistory } from './infra/lock-history.infra';
import type { LockRecorder } from './infra/lock-recorder.infra';
import { createMigratedDatabase, type PgServer } from './infra/postgres.infra';
import { freePort } from '@dlock/testing';
import { startLockFront, startLockReplicas, type LockReplica } from './lock-replicas.infra';
import { SystemNet } from './nemesis/system-net.nemesis';

/**
 * Timing of a harness system. Short on purpose (scenarios must run in
 * seconds), but consistent with the executor's lease rule: the local lease
 * after a grant, lockTtl × (1 − margin), must cover one worst-case submit
 * (1 s + railReadTimeout + 2 s), or nothing would ever reach the rail.
 */
export interface Timing {
  sessionTtlMs: number;
  lockTtlMs: number;
  safetyMargin: number;
  railReadTimeoutMs: number;
  /** rail-stub `hold` failures keep the connection this long (> railReadTimeoutMs: a timeout). */
  railHoldMs: number;
  pollMs: number;
  recoveryMs: number;
  settlementMs: number;
  reconcilerIntervalMs: number;
}

export const FAST_TIMING: Timing = {
  sessionTtlMs: 3_000,
  // × (1 − safetyMargin) = 5.6 s of lease the executor counts on, against a 4 s submit budget
  // (1 s + railReadTimeoutMs + 2 s, docs/executor.md): 1.6 s left for the acquire, the claim
  // and RAIL_SUBMITTED. With 6 s only 0.2 s was left, and on a loaded machine every attempt
  // gave its lease back as too short (a CI run's UC-03 did so for 20 s).
  lockTtlMs: 8_000,
  safetyMargin: 0.3,
  railReadTimeoutMs: 1_000,
  railHoldMs: 2_500,
  pollMs: 200,
  recoveryMs: 500,
  settlementMs: 1_000,
  reconcilerIntervalMs: 500,
};

export type Backend = 'pg' | 'etcd';

export interface SystemOptions {
  label: string;
  backend: Backend;
  pg: PgServer;
  workDir: string;
  /** false only for the negative control: both guards' kill switches off. */
  fencing?: boolean;
  etcdMembers?: number;
  reconciler?: boolean;
  railSeed?: number;
  timing?: Timing;
  /** Lock-server processes on the one backend, each with its recorder and fault proxy (default 1). */
  lockReplicas?: number;
  /**
   * Give the replicas, etcd members and the lock database addresses and cgroups
   * of their own, for partitions (where a PacketFilter can run; `netUnavailable` says why not).
   */
  partitions?: boolean;
  /** The rail stub's latency on every call (default 0): keeps payouts at the rail a while. */
  railLatencyMs?: number;
}

/**
 * One running dlock system built from the real artefacts: lock-server (pg or
 * etcd), payment-resource, rail-proxy, rail-stub, reconciler and any number
 * of executors, each a real process. Every worker→lock-server call passes a
 * fault proxy (`lockNet`) and a history recorder; proxy→rail passes `railNet`.
 */
/** The payout apps accept their test-only settings (fencing kill switches, pause points) only with this. */
const HARNESS_ENV = { DLOCK_HARNESS: '1' };

export class DlockSystem {
  readonly executors = new Map<string, AppProcess>();
  /** Apps that were replaced keep their event counts here. */
  private readonly retired: AppProcess[] = [];
  /** Every lock-server replica; executors are bound to one each, round-robin. */
  readonly lockReplicas: LockReplica[] = [];
  /** Their processes, from their start on (a boot that fails halfway still stops them). */
  private lockServers: AppProcess[] = [];
  payment!: AppProcess;
  railProxy!: AppProcess;
  railStub!: AppProcess;
  reconciler: AppProcess | null = null;
  railNet!: TcpProxy;
  /** Addresses and cgroups for partitions, when asked for and possible. */
  net: SystemNet | null = null;
  /** Why `net` is null although partitions were asked for. */
  netUnavailable = '';
  /** The pg lock database's front on an address of its own (with `net`). */
  lockdbFront: TcpProxy | null = null;
  /** Which replica each executor owner is bound to. */
  private readonly replicaOf = new Map<string, number>();
  etcd: EtcdCluster | null = null;
  lockdbUrl = '';
  paydbUrl = '';
  proxydbUrl = '';
  readonly timing: Timing;
  readonly fencing: boolean;

  private constructor(readonly opts: SystemOptions) {
    this.timing = opts.timing ?? FAST_TIMING;
    this.fencing = opts.fencing ?? true;
  }

  /** Replica 0: the lock-server existing scenarios, the reconciler and the console talk to. */
  get lockServer(): AppProcess {
    return this.lockReplicas[0].server;
  }

  get recorder(): LockRecorder {
    return this.lockReplicas[0].recorder;
  }

  get lockNet(): TcpProxy {
    return this.lockReplicas[0].net;
  }

  /** Every replica's grants, releases, revocations and calls as one timeline. */
  lockHistory(): RecordedLockHistory {
    return mergeLockHistories(this.lockReplicas.map((r) => r.recorder));
  }

  /** The replica `ownerId`'s executor is bound to (bound at its first start, round-robin). */
  replicaFor(ownerId: string): LockReplica {
    let i = this.replicaOf.get(ownerId);
    if (i === undefined) {
      i = this.replicaOf.size % this.lockReplicas.length;
      this.replicaOf.set(ownerId, i);
    }
    return this.lockReplicas[i];
  }

  static async start(opts: SystemOptions): Promise<DlockSystem> {
    const sys = new DlockSystem(opts);
    try {
      await sys.boot();
    } catch (err) {
      await sys.stop();
      throw err;
    }
    return sys;
  }

  private async boot(): Promise<void> {
    const { label, pg, workDir } = this.opts;
    mkdirSync(workDir, { recursive: true });
    if (this.opts.partitions) ({ net: this.net, why: this.netUnavailable } = SystemNet.tryOpen());
    const prefix = `h_${label.replace(/[^a-z0-9]/gi, '').toLowerCase()}`;
    [this.paydbUrl, this.proxydbUrl] = await Promise.all([
      createMigratedDatabase(pg, 'paydb', prefix),
      createMigratedDatabase(pg, 'proxydb', prefix),
    ]);
    await this.startFirstApps(await this.lockBackendEnv(prefix));
    for (const [index, server] of this.lockServers.entries())
      this.lockReplicas.push({ index, server, ...(await startLockFront(server)) });
    this.railNet = await TcpProxy.start({ target: { port: this.railStub.port } });
    this.railProxy = await AppProcess.start('rail-proxy', {
      ...HARNESS_ENV,
      PROXYDB_URL: this.proxydbUrl,
      RAIL_STUB_URL: this.railNet.url,
      RAIL_READ_TIMEOUT_MS: String(this.timing.railReadTimeoutMs),
      RAIL_PROXY_FENCING_ENABLED: String(this.fencing),
    });
    if (this.opts.reconciler ?? true) await this.startReconciler();
  }

  /** The lock-server's backend: its own database, or an etcd cluster of `etcdMembers`. */
  private async lockBackendEnv(prefix: string): Promise<Record<string, string>> {
    const { label, pg, workDir } = this.opts;
    const t = this.timing;
    const lockEnv: Record<string, string> = {
      LOCK_BACKEND: this.opts.backend,
      LOCK_SESSION_TTL_MS: String(t.sessionTtlMs),
      LOCK_DEFAULT_TTL_MS: String(t.lockTtlMs),
    };
    if (this.opts.backend === 'pg') {
      this.lockdbUrl = await createMigratedDatabase(pg, 'lockdb', prefix);
      lockEnv.LOCKDB_URL = await this.lockdbUrlForReplicas();
    } else {
      const net = this.net;
      const hosts = net?.etcdHosts(this.opts.etcdMembers ?? 1);
      this.etcd = await startEtcdCluster({
        members: this.opts.etcdMembers ?? 1,
        label: `harness-${label}`,
        dataRoot: path.join(workDir, 'etcd'),
        hosts,
        onSpawn: net && hosts ? (name, pid) => net.joinEtcd(name, pid, hosts) : undefined,
      });
      lockEnv.ETCD_ENDPOINTS = this.etcd.endpoints.join(',');
    }
    return lockEnv;
  }

  /** The lock database as the replicas reach it: through its front when partitions are on. */
  private async lockdbUrlForReplicas(): Promise<string> {
    if (!this.net) return this.lockdbUrl;
    const url = new URL(this.lockdbUrl);
    this.lockdbFront = await TcpProxy.start({
      target: { host: url.hostname, port: Number(url.port) },
      listenHost: this.net.lockdbAddress,
    });
    url.hostname = this.net.lockdbAddress;
    url.port = String(this.lockdbFront.port);
    return url.toString();
  }

  /** The apps that need no other app: lock-server replicas, rail stub and payment-resource, at once. */
  private async startFirstApps(lockEnv: Record<string, string>): Promise<void> {
    const { label, workDir } = this.opts;
    const t = this.timing;
    const stubPort = await freePort();
    const [replicas, railStub, payment] = await Promise.all([
      startLockReplicas(this.opts.lockReplicas ?? 1, lockEnv, this.net),
      AppProcess.start(
        'rail-stub',
        {
          RAIL_STUB_JOURNAL_PATH: path.join(workDir, `rail-${label}-${Date.now()}.jsonl`),
          RAIL_STUB_JOURNAL_FSYNC: 'false',
          RAIL_STUB_SETTLEMENT_WINDOW_MS: String(t.settlementMs),
          RAIL_STUB_HOLD_MS: String(t.railHoldMs),
          RAIL_STUB_SEED: String(this.opts.railSeed ?? 1),
          RAIL_STUB_LATENCY_MS: String(this.opts.railLatencyMs ?? 0),
        },
        { port: stubPort },
      ),
      AppProcess.start('payment-resource', {
        ...HARNESS_ENV,
        PAYDB_URL: this.paydbUrl,
        PAYMENT_FENCING_ENABLED: String(this.fencing),
      }),
    ]);
    this.lockServers = replicas;
    this.railStub = railStub;
    this.payment = payment;
  }

  private async startReconciler(): Promise<void> {
    const t = this.timing;
    this.reconciler = await AppProcess.start('reconciler', {
      PAYDB_URL: this.paydbUrl,
      PROXYDB_URL: this.proxydbUrl,
      LOCK_SERVER_URL: this.recorder.url,
      PAYMENT_RESOURCE_URL: this.payment.url,
      // R3: the rail's record as the proxy receipts it, what P8 is written on (docs/rail.md).
      RAIL_PROXY_URL: this.railProxy.url,
      RAIL_STUB_URL: this.railStub.url,
      RECONCILER_INTERVAL_MS: String(t.reconcilerIntervalMs),
      RECONCILER_CHECK_INTERVAL_MS: '2000',
      RECONCILER_SETTLEMENT_WINDOW_MS: String(t.settlementMs),
      RECONCILER_TOKEN_MATCH_GRACE_MS: '5000',
      LOCK_SESSION_TTL_MS: String(t.sessionTtlMs),
      LOCK_DEFAULT_TTL_MS: String(t.lockTtlMs),
    });
  }

  /** Environment of an executor worker; `extra` adds harness knobs. */
  executorEnv(ownerId: string, extra: Record<string, string> = {}): Record<string, string> {
    const t = this.timing;
    return {
      DLOCK_HARNESS: '1',
      OWNER_ID: ownerId,
      LOCK_SERVER_URL: this.replicaFor(ownerId).net.url,
      PAYMENT_RESOURCE_URL: this.payment.url,
      RAIL_PROXY_URL: this.railProxy.url,
      LOCK_SESSION_TTL_MS: String(t.sessionTtlMs),
      LOCK_DEFAULT_TTL_MS: String(t.lockTtlMs),
      LOCK_CLIENT_SAFETY_MARGIN: String(t.safetyMargin),
      RAIL_READ_TIMEOUT_MS: String(t.railReadTimeoutMs),
      EXECUTOR_POLL_INTERVAL_MS: String(t.pollMs),
      EXECUTOR_RECOVERY_INTERVAL_MS: String(t.recoveryMs),
      EXECUTOR_SHUTDOWN_GRACE_MS: '3000',
      EXECUTOR_CONCURRENCY: '4',
      ...extra,
    };
  }

  /**
   * `wait: false` for a worker that is meant to die soon (a crash point): it
   * may be gone before it would ever have answered a readiness probe.
   */
  async startExecutor(
    ownerId: string,
    extra: Record<string, string> = {},
    opts: { wait?: boolean } = {},
  ): Promise<AppProcess> {
    const existing = this.executors.get(ownerId);
    if (existing?.running()) throw new Error(`executor ${ownerId} is already running`);
    if (existing) this.retired.push(existing);
    const p = await AppProcess.start('executor', this.executorEnv(ownerId, extra), {
      name: `executor:${ownerId}`,
      wait: opts.wait,
    });
    this.executors.set(ownerId, p);
    return p;
  }

  async stopExecutors(graceful = true): Promise<void> {
    await Promise.all([...this.executors.values()].map((p) => (graceful ? p.stop() : p.kill())));
    this.retired.push(...this.executors.values());
    this.executors.clear();
  }

  /** Every app process ever started by this system, live or not. */
  allApps(): AppProcess[] {
    const live = [
      ...this.lockServers,
      this.payment,
      this.railProxy,
      this.railStub,
      this.reconciler,
    ];
    return [
      ...live.filter((p): p is AppProcess => !!p),
      ...this.executors.values(),
      ...this.retired,
    ];
  }

  /** Safety events seen in every log so far, summed over processes and restarts. */
  eventCounts(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const p of this.allApps()) {
      for (const [k, v] of p.events) out[k] = (out[k] ?? 0) + v;
    }
    return out;
  }

  async stop(): Promise<void> {
    const apps = this.allApps().filter((p) => p.running());
    await Promise.all(apps.map((p) => p.kill()));
    for (const r of this.lockReplicas) {
      await r.net.close().catch(() => undefined);
      await r.recorder.close().catch(() => undefined);
    }
    await this.railNet?.close().catch(() => undefined);
    await this.lockdbFront?.close().catch(() => undefined);
    await this.etcd?.stop().catch(() => undefined);
    this.net?.close();
  }
}
