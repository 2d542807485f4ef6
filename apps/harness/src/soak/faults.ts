import { pick } from '@dlock/prng';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PgServer } from '../infra/postgres';
import type { DlockSystem } from '../system';
import { setStubFaults } from '../scenarios/helpers';

export const FAULT_KINDS = [
  'executor-pause',
  'executor-kill',
  'lock-server-restart',
  'postgres-restart',
  'etcd-leader-kill',
  'etcd-leader-pause',
  'rail-timeouts',
  'lock-net-latency',
  'lock-net-reset',
  'lock-net-blackhole',
  'rail-net-blackhole',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** One planned fault: everything about it is drawn from the seed before it runs. */
export interface PlannedFault {
  kind: FaultKind;
  /** How long the fault lasts (pause, outage, window). */
  durationMs: number;
  /** Which executor, for executor faults (index into the sorted owner ids). */
  target: number;
}

/** The kinds this system can suffer (PostgreSQL restart needs a server the harness owns, etc.). */
export function applicableKinds(sys: DlockSystem, pg: PgServer): FaultKind[] {
  return FAULT_KINDS.filter((k) => {
    switch (k) {
      case 'postgres-restart':
        return sys.opts.backend === 'pg' && pg.canRestart;
      case 'etcd-leader-kill':
      case 'etcd-leader-pause':
        return (sys.etcd?.members.length ?? 0) >= 3;
      default:
        return true;
    }
  });
}

export function planFault(random: () => number, kinds: readonly FaultKind[]): PlannedFault {
  const kind = pick(random, kinds);
  return {
    kind,
    durationMs: 1_000 + Math.floor(random() * 3_000),
    target: Math.floor(random() * 1_000),
  };
}

/**
 * Injects one fault and heals it. Returns a short description, or null when
 * the fault could not apply (e.g. a second etcd leader kill would cost quorum).
 */
export async function inject(
  sys: DlockSystem,
  pg: PgServer,
  f: PlannedFault,
  state: { etcdKills: number },
): Promise<string | null> {
  switch (f.kind) {
    case 'executor-pause':
    case 'executor-kill':
      return executorFault(sys, f);
    case 'lock-server-restart':
      await sys.lockServer.kill();
      await sleep(f.durationMs);
      await sys.lockServer.restart();
      return `lock-server SIGKILL, restarted after ${f.durationMs} ms`;
    case 'postgres-restart':
      await pg.restart(f.durationMs);
      return `PostgreSQL restarted (${f.durationMs} ms down)`;
    case 'etcd-leader-kill':
    case 'etcd-leader-pause':
      return etcdLeaderFault(sys, f, state);
    case 'rail-timeouts':
    case 'lock-net-latency':
    case 'lock-net-reset':
    case 'lock-net-blackhole':
    case 'rail-net-blackhole':
      return networkFault(sys, f.kind, f.durationMs);
  }
}

/** Pauses or kills the executor `f.target` picks, then brings it back. */
async function executorFault(sys: DlockSystem, f: PlannedFault): Promise<string | null> {
  const owners = [...sys.executors.keys()].sort();
  const executor =
    owners.length > 0 ? sys.executors.get(owners[f.target % owners.length]) : undefined;
  if (f.kind === 'executor-pause') {
    if (!executor?.running()) return null;
    // Longer than the session: the lease really ends while it sleeps.
    const ms = sys.timing.sessionTtlMs + f.durationMs;
    executor.pause();
    await sleep(ms);
    executor.resume();
    return `${executor.name} SIGSTOP ${ms} ms`;
  }
  if (!executor) return null;
  await executor.kill();
  await sleep(f.durationMs);
  await executor.restart();
  return `${executor.name} SIGKILL, restarted after ${f.durationMs} ms`;
}

/** Kills the etcd leader (once per run: a second kill would cost quorum) or pauses it. */
async function etcdLeaderFault(
  sys: DlockSystem,
  f: PlannedFault,
  state: { etcdKills: number },
): Promise<string | null> {
  if (!sys.etcd) return null;
  if (f.kind === 'etcd-leader-kill') {
    if (state.etcdKills > 0) return null;
    const leader = await sys.etcd.leader();
    await leader.kill();
    state.etcdKills++;
    const next = await sys.etcd.waitForLeader(15_000);
    return `etcd leader ${leader.name} SIGKILL, ${next.name} elected`;
  }
  const leader = await sys.etcd.leader();
  leader.pause();
  await sleep(f.durationMs);
  leader.resume();
  return `etcd leader ${leader.name} SIGSTOP ${f.durationMs} ms`;
}

/** Rail failures, or a fault on the worker→lock-server or proxy→rail link, for a while. */
async function networkFault(
  sys: DlockSystem,
  kind: Extract<
    FaultKind,
    | 'rail-timeouts'
    | 'lock-net-latency'
    | 'lock-net-reset'
    | 'lock-net-blackhole'
    | 'rail-net-blackhole'
  >,
  durationMs: number,
): Promise<string> {
  switch (kind) {
    case 'rail-timeouts':
      await setStubFaults(sys, { failureRate: 0.3, failureMode: 'mixed', failureAcceptRate: 0.5 });
      await sleep(durationMs * 2);
      await setStubFaults(sys, { failureRate: 0 });
      return `rail failure rate 0.3 (mixed) for ${durationMs * 2} ms`;
    case 'lock-net-latency':
      sys.lockNet.setFault({ kind: 'latency', ms: 200 + (durationMs % 400) });
      await sleep(durationMs * 2);
      sys.lockNet.setFault({ kind: 'none' });
      return `worker→lock-server latency for ${durationMs * 2} ms`;
    case 'lock-net-reset':
    case 'lock-net-blackhole':
      sys.lockNet.setFault({ kind: kind === 'lock-net-reset' ? 'reset' : 'blackhole' });
      await sleep(durationMs);
      sys.lockNet.setFault({ kind: 'none' });
      return `worker→lock-server ${kind.slice(9)} for ${durationMs} ms`;
    case 'rail-net-blackhole':
      sys.railNet.setFault({ kind: 'blackhole' });
      await sleep(durationMs);
      sys.railNet.setFault({ kind: 'none' });
      return `proxy→rail blackhole for ${durationMs} ms`;
  }
}
