import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { startEtcdCluster, TcpProxy, type EtcdCluster } from '@dlock/testing';
import { AppProcess } from './infra/app-process';
import { LockRecorder } from './infra/lock-recorder';
import { createMigratedDatabase, type PgServer } from './infra/postgres';
import { freePort, lockServerProofs, registerAudience, registerProofSource } from '@dlock/testing';

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
  lockTtlMs: 6_000,
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
  lockServer!: AppProcess;
  payment!: AppProcess;
  railProxy!: AppProcess;
  railStub!: AppProcess;
  reconciler: AppProcess | null = null;
  recorder!: LockRecorder;
  lockNet!: TcpProxy;
  railNet!: TcpProxy;
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
    const prefix = `h_${label.replace(/[^a-z0-9]/gi, '').toLowerCase()}`;
    [this.paydbUrl, this.proxydbUrl] = await Promise.all([
      createMigratedDatabase(pg, 'paydb', prefix),
      createMigratedDatabase(pg, 'proxydb', prefix),
    ]);
    await this.startFirstApps(await this.lockBackendEnv(prefix));
    await this.startLockFront();
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
      lockEnv.LOCKDB_URL = this.lockdbUrl;
    } else {
      this.etcd = await startEtcdCluster({
        members: this.opts.etcdMembers ?? 1,
        label: `harness-${label}`,
        dataRoot: path.join(workDir, 'etcd'),
      });
      lockEnv.ETCD_ENDPOINTS = this.etcd.endpoints.join(',');
    }
    return lockEnv;
  }

  /** The apps that need no other app: lock-server, rail stub and payment-resource, at once. */
  private async startFirstApps(lockEnv: Record<string, string>): Promise<void> {
    const { label, workDir } = this.opts;
    const t = this.timing;
    const stubPort = await freePort();
    const [lockServer, railStub, payment] = await Promise.all([
      AppProcess.start('lock-server', lockEnv),
      AppProcess.start(
        'rail-stub',
        {
          RAIL_STUB_JOURNAL_PATH: path.join(workDir, `rail-${label}-${Date.now()}.jsonl`),
          RAIL_STUB_JOURNAL_FSYNC: 'false',
          RAIL_STUB_SETTLEMENT_WINDOW_MS: String(t.settlementMs),
          RAIL_STUB_HOLD_MS: String(t.railHoldMs),
          RAIL_STUB_SEED: String(this.opts.railSeed ?? 1),
        },
        { port: stubPort },
      ),
      AppProcess.start('payment-resource', {
        ...HARNESS_ENV,
        PAYDB_URL: this.paydbUrl,
        PAYMENT_FENCING_ENABLED: String(this.fencing),
      }),
    ]);
    this.lockServer = lockServer;
    this.railStub = railStub;
    this.payment = payment;
  }

  /** The recorder and the faultable link in front of the lock-server. */
  private async startLockFront(): Promise<void> {
    this.recorder = await LockRecorder.start(this.lockServer.port);
    this.lockNet = await TcpProxy.start({ target: { port: this.recorder.port } });
    // Both stand in front of the lock-server: a request through them is addressed to it.
    registerAudience(this.recorder.url, 'lock-server');
    registerAudience(this.lockNet.url, 'lock-server');
    registerProofSource(this.recorder.url, lockServerProofs);
    registerProofSource(this.lockNet.url, lockServerProofs);
  }

  private async startReconciler(): Promise<void> {
    const t = this.timing;
    this.reconciler = await AppProcess.start('reconciler', {
      PAYDB_URL: this.paydbUrl,
      PROXYDB_URL: this.proxydbUrl,
      LOCK_SERVER_URL: this.recorder.url,
      PAYMENT_RESOURCE_URL: this.payment.url,
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
      LOCK_SERVER_URL: this.lockNet.url,
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
    const live = [this.lockServer, this.payment, this.railProxy, this.railStub, this.reconciler];
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
    await this.lockNet?.close().catch(() => undefined);
    await this.railNet?.close().catch(() => undefined);
    await this.recorder?.close().catch(() => undefined);
    await this.etcd?.stop().catch(() => undefined);
  }
}
