import { pick } from '@dlock/prng';
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { LIBFAKETIME } from '../nemesis/clock.nemesis';
import type { PgServer } from '../infra/postgres.infra';
import type { DlockSystem } from '../dlock-system.infra';
import { setStubFaults } from '../scenarios/scenario.support';
import { clockSkew, etcdPartition, replicaKill, replicaPartition } from './replica.nemesis';

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
  'lock-replica-kill',
  'lock-replica-partition',
  'etcd-partition',
  'clock-skew',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** One planned fault: everything about it is drawn from the seed before it runs. */
export interface PlannedFault {
  kind: FaultKind;
  /** How long the fault lasts (pause, outage, window). */
  durationMs: number;
  /** Which executor, for executor faults (index into the sorted owner ids). */
  target: number;
  /** Which shape, offset or sign, for partitions and clock faults. */
  variant: number;
}

/**
 * Why this system cannot suffer `kind`, or null when it can (PostgreSQL
 * restart needs a server the harness owns, partitions a PacketFilter, etc.).
 */
export function whyNotApplicable(kind: FaultKind, sys: DlockSystem, pg: PgServer): string | null {
  const etcdMembers = sys.etcd?.members.length ?? 0;
  switch (kind) {
    case 'postgres-restart':
      return sys.opts.backend === 'pg' && pg.canRestart
        ? null
        : 'needs the pg backend on a PostgreSQL the harness owns (not the shared test server)';
    case 'etcd-leader-kill':
    case 'etcd-leader-pause':
      return etcdMembers >= 3 ? null : 'needs an etcd cluster of three members';
    case 'lock-replica-kill':
      return sys.lockReplicas.length >= 2 ? null : 'needs two lock-server replicas or more';
    case 'lock-replica-partition':
      return sys.net ? null : sys.netUnavailable || 'partitions are off';
    case 'etcd-partition':
      if (etcdMembers < 3) return 'needs an etcd cluster of three members';
      return sys.net ? null : sys.netUnavailable || 'partitions are off';
    case 'clock-skew':
      return existsSync(LIBFAKETIME)
        ? null
        : `${LIBFAKETIME} is missing (apt-get install faketime)`;
    default:
      return null;
  }
}

export function applicableKinds(sys: DlockSystem, pg: PgServer): FaultKind[] {
  return FAULT_KINDS.filter((k) => whyNotApplicable(k, sys, pg) === null);
}

/**
 * The kinds `--nemesis` names (`all`, or a comma-separated list): `all` leaves
 * out what this system cannot suffer and says why; a named kind it cannot
 * suffer is an error, never skipped.
 */
export function selectKinds(
  nemesis: string,
  sys: DlockSystem,
  pg: PgServer,
): { kinds: FaultKind[]; leftOut: Array<{ kind: FaultKind; why: string }> } {
  const leftOut = FAULT_KINDS.flatMap((kind) => {
    const why = whyNotApplicable(kind, sys, pg);
    return why === null ? [] : [{ kind, why }];
  });
  if (nemesis === 'all') return { kinds: applicableKinds(sys, pg), leftOut };
  const named = parseNemesis(nemesis);
  const refused = leftOut.filter((l) => named.includes(l.kind));
  if (refused.length > 0)
    throw new Error(`--nemesis: ${refused.map((l) => `${l.kind} (${l.why})`).join('; ')}`);
  // Kinds not named were not asked for: nothing to explain.
  return { kinds: named, leftOut: [] };
}

/** `all` or known kinds, comma-separated; anything else is refused. */
export function parseNemesis(nemesis: string): FaultKind[] {
  if (nemesis === 'all') return [...FAULT_KINDS];
  const named = nemesis.split(',').map((k) => k.trim());
  const unknown = named.filter((k) => !(FAULT_KINDS as readonly string[]).includes(k));
  if (unknown.length > 0 || named.length === 0)
    throw new Error(
      `--nemesis: unknown kind(s) ${unknown.join(', ')}; known: all, ${FAULT_KINDS.join(', ')}`,
    );
  return named as FaultKind[];
}

/** The kinds that act on one lock-server replica, chosen by the fault's seeded `target`. */
const REPLICA_KINDS: ReadonlySet<FaultKind> = new Set<FaultKind>([
  'lock-server-restart',
  'lock-net-latency',
  'lock-net-reset',
  'lock-net-blackhole',
  'lock-replica-kill',
  'lock-replica-partition',
]);

/**
 * The replica a fault acts on, or undefined for a kind that acts on none.
 * Pure: the same seed draws the same replica, and one replica is always 0.
 */
export function faultReplica(f: PlannedFault, replicas: number): number | undefined {
  if (!REPLICA_KINDS.has(f.kind) || replicas < 1) return undefined;
  return f.target % replicas;
}

export function planFault(random: () => number, kinds: readonly FaultKind[]): PlannedFault {
  const kind = pick(random, kinds);
  return {
    kind,
    durationMs: 1_000 + Math.floor(random() * 3_000),
    target: Math.floor(random() * 1_000),
    variant: Math.floor(random() * 1_000_000),
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
    case 'lock-server-restart': {
      const server = sys.lockReplicas[faultReplica(f, sys.lockReplicas.length)!].server;
      await server.kill();
      await sleep(f.durationMs);
      await server.restart();
      return `${server.name} SIGKILL, restarted after ${f.durationMs} ms`;
    }
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
      return networkFault(sys, f.kind, f);
    case 'lock-replica-kill':
      return replicaKill(sys, f);
    case 'lock-replica-partition':
      return replicaPartition(sys, f);
    case 'etcd-partition':
      return etcdPartition(sys, f);
    case 'clock-skew':
      return clockSkew(sys, f);
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
  const ms = leaderStallMs(f.durationMs, sys.timing.sessionTtlMs);
  const leader = await sys.etcd.leader();
  leader.pause();
  await sleep(ms);
  leader.resume();
  return `etcd leader ${leader.name} SIGSTOP ${ms} ms`;
}

/** Below the session TTL by this much: a resumed leader must still find every lease in date. */
export const LEADER_STALL_MARGIN_MS = 1_000;

/**
 * How long an etcd leader is stopped: never as long as a session's TTL. The etcd this
 * project runs (Debian's 3.4.23) revokes, on waking, leases a leader stalled past their TTL
 * although the new leader kept them alive; docs/lock-server-etcd.md ("Members that stall")
 * tells operators to keep TTLs above the longest stall, and the soak keeps to that rule
 * (bench/reports/soak-etcd-leader-stall.md is a run that did not: every session lost at once).
 */
export function leaderStallMs(drawnMs: number, sessionTtlMs: number): number {
  return Math.max(1, Math.min(drawnMs, sessionTtlMs - LEADER_STALL_MARGIN_MS));
}

/**
 * Rail failures, or a fault on the worker→lock-server link of the replica the
 * seed drew (the executors bound to it feel it) or on proxy→rail, for a while.
 */
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
  f: PlannedFault,
): Promise<string> {
  const { durationMs } = f;
  const replica = sys.lockReplicas[faultReplica(f, sys.lockReplicas.length) ?? 0];
  const to = sys.lockReplicas.length === 1 ? 'lock-server' : replica.server.name;
  switch (kind) {
    case 'rail-timeouts':
      await setStubFaults(sys, { failureRate: 0.3, failureMode: 'mixed', failureAcceptRate: 0.5 });
      await sleep(durationMs * 2);
      await setStubFaults(sys, { failureRate: 0 });
      return `rail failure rate 0.3 (mixed) for ${durationMs * 2} ms`;
    case 'lock-net-latency':
      replica.net.setFault({ kind: 'latency', ms: 200 + (durationMs % 400) });
      await sleep(durationMs * 2);
      replica.net.setFault({ kind: 'none' });
      return `worker→${to} latency for ${durationMs * 2} ms`;
    case 'lock-net-reset':
    case 'lock-net-blackhole':
      replica.net.setFault({ kind: kind === 'lock-net-reset' ? 'reset' : 'blackhole' });
      await sleep(durationMs);
      replica.net.setFault({ kind: 'none' });
      return `worker→${to} ${kind.slice(9)} for ${durationMs} ms`;
    case 'rail-net-blackhole':
      sys.railNet.setFault({ kind: 'blackhole' });
      await sleep(durationMs);
      sys.railNet.setFault({ kind: 'none' });
      return `proxy→rail blackhole for ${durationMs} ms`;
  }
}
