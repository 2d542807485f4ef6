import { mulberry32 } from '@dlock/prng';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AppProcess } from '../infra/app-process.infra';
import { FakeClock } from '../nemesis/clock.nemesis';
import {
  applyPartition,
  bridge,
  cutOff,
  isolate,
  majorityMinority,
  oneWay,
  type Partition,
} from '../nemesis/partition.nemesis';
import type { SystemNet } from '../nemesis/system-net.nemesis';
import type { DlockSystem } from '../dlock-system.infra';

/**
 * The soak's replica, partition and clock faults (docs/harness.md, "Soak").
 * Each is healed before it returns; one that cannot be applied throws, so the
 * run fails loudly instead of passing without it.
 */

/** What the seed drew for one fault: its target, its length and its variant. */
export interface FaultDraw {
  durationMs: number;
  target: number;
  variant: number;
}

function netOf(sys: DlockSystem): SystemNet {
  if (!sys.net) throw new Error(`no packet filter: ${sys.netUnavailable || 'partitions are off'}`);
  return sys.net;
}

/** SIGKILL one lock-server replica, and restart it after `durationMs`. */
export async function replicaKill(sys: DlockSystem, f: FaultDraw): Promise<string> {
  const replica = sys.lockReplicas[f.target % sys.lockReplicas.length];
  await replica.server.kill();
  await sleep(f.durationMs);
  await replica.server.restart();
  return `${replica.server.name} SIGKILL, restarted after ${f.durationMs} ms`;
}

/** One replica cut from its database (pg) or from every etcd member, then healed. */
export async function replicaPartition(sys: DlockSystem, f: FaultDraw): Promise<string> {
  const net = netOf(sys);
  const i = f.target % sys.lockReplicas.length;
  const servers = sys.opts.backend === 'pg' ? [net.lockdbNode()] : net.etcdNodeList();
  if (servers.length === 0) throw new Error('the lock backend has no nodes to cut');
  const ms = f.durationMs * 2;
  return withPartition(net, cutOff([net.replicaNode(i)], servers), ms, async () => undefined);
}

/** A partition shape among the etcd members; afterwards the cluster must elect a leader again. */
export async function etcdPartition(sys: DlockSystem, f: FaultDraw): Promise<string> {
  const net = netOf(sys);
  const etcd = sys.etcd;
  const nodes = net.etcdNodeList();
  if (!etcd || nodes.length < 3) throw new Error('etcd partitions need three members with nodes');
  const random = mulberry32(f.variant);
  let partition: Partition;
  switch (f.variant % 4) {
    case 0:
      partition = isolate(net.etcdNode((await etcd.leader()).name), nodes);
      break;
    case 1:
      partition = majorityMinority(nodes, random);
      break;
    case 2:
      partition = bridge(nodes, random);
      break;
    default:
      partition = oneWay(nodes, random);
  }
  return withPartition(net, partition, f.durationMs * 2, async () => {
    await etcd.waitForLeader(15_000);
  });
}

/** Puts `partition` in force for `ms`, heals it (also on a failure), then `after`. */
async function withPartition(
  net: SystemNet,
  partition: Partition,
  ms: number,
  after: () => Promise<void>,
): Promise<string> {
  try {
    applyPartition(net.filter, partition);
    const rules = net.filter.rules();
    if (rules === 0) throw new Error(`${partition.label}: no rule in force`);
    await sleep(ms);
  } finally {
    net.filter.heal();
  }
  await after();
  return `${partition.label} for ${ms} ms`;
}

/** libfaketime's variables: removed again when the true clock is restored. */
const FAKETIME_ENV_OFF = {
  LD_PRELOAD: undefined,
  FAKETIME_TIMESTAMP_FILE: undefined,
  FAKETIME_CACHE_DURATION: undefined,
  FAKETIME_DONT_FAKE_MONOTONIC: undefined,
};

/**
 * One lock-server replica or one executor restarted with its wall clock
 * skewed, jumped the other way while it runs, then restarted on the true
 * clock. Offsets stay within seconds: an hour would only make the process
 * refuse every token (it fails closed), which tests nothing else.
 */
export async function clockSkew(sys: DlockSystem, f: FaultDraw): Promise<string> {
  const owners = [...sys.executors.keys()].sort();
  const targets: AppProcess[] = [
    ...sys.lockReplicas.map((r) => r.server),
    ...owners.map((o) => sys.executors.get(o)!),
  ];
  const target = targets[f.target % targets.length];
  const sign = f.variant % 2 === 0 ? 1 : -1;
  const offsetMs = sign * (500 + (f.variant % 9_500));
  const specFile = path.join(sys.opts.workDir, `clock-${target.name.replace(/\W/g, '-')}`);
  const clock = new FakeClock(specFile, { kind: 'skew', offsetMs });
  try {
    await target.restart(clock.env());
    await sleep(f.durationMs);
    clock.set({ kind: 'jump', offsetMs: -offsetMs });
    await sleep(f.durationMs);
  } finally {
    await target.restart(FAKETIME_ENV_OFF);
  }
  return (
    `${target.name} clock skewed ${offsetMs} ms, jumped to ${-offsetMs} ms, ` +
    `restored after ${f.durationMs * 2} ms`
  );
}
