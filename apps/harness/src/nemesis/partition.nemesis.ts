import type { NetNode, PacketFilter } from '../infra/packet-filter.infra';

/**
 * The partition shapes of docs/harness.md, "Partitions" (after Jepsen's
 * grudges): each is a list of one-way cuts for a PacketFilter. Pure: a seeded
 * run picks the same shapes in the same order.
 */

/** Nothing `from` sends reaches `to`. */
export interface Cut {
  from: readonly NetNode[];
  to: readonly NetNode[];
}

export interface Partition {
  /** For the run's timeline: `isolate etcd-m2`, `split [a b] | [c]`, … */
  label: string;
  cuts: Cut[];
}

/** A random number in [0, 1) from the run's seeded PRNG. */
export type Random = () => number;

function names(nodes: readonly NetNode[]): string {
  return `[${nodes.map((n) => n.name).join(' ')}]`;
}

/** Both ways between two groups. */
function apart(a: readonly NetNode[], b: readonly NetNode[]): Cut[] {
  return [
    { from: a, to: b },
    { from: b, to: a },
  ];
}

/** Fisher–Yates with the run's PRNG. */
export function shuffled<T>(items: readonly T[], random: Random): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** `node` hears nobody in `group` and nobody hears it (the etcd leader, a lock-server replica). */
export function isolate(node: NetNode, group: readonly NetNode[]): Partition {
  const rest = group.filter((n) => n.name !== node.name);
  return { label: `isolate ${node.name}`, cuts: apart([node], rest) };
}

/** A random minority (at least one) cut both ways from the majority. */
export function majorityMinority(group: readonly NetNode[], random: Random): Partition {
  if (group.length < 2) throw new Error('a split needs two nodes');
  const order = shuffled(group, random);
  const minoritySize = 1 + Math.floor(random() * Math.floor((group.length - 1) / 2));
  const minority = order.slice(0, minoritySize);
  const majority = order.slice(minoritySize);
  return {
    label: `split ${names(majority)} | ${names(minority)}`,
    cuts: apart(majority, minority),
  };
}

/** One node's packets to the rest are dropped, theirs to it still arrive (asymmetric). */
export function oneWay(group: readonly NetNode[], random: Random): Partition {
  const [deaf, ...rest] = shuffled(group, random);
  return { label: `one-way ${deaf.name} -/-> ${names(rest)}`, cuts: [{ from: [deaf], to: rest }] };
}

/**
 * Two halves that cannot hear each other, and one node in the middle that both
 * hear (Jepsen's bridge): with five etcd members, two majorities overlap in it.
 */
export function bridge(group: readonly NetNode[], random: Random): Partition {
  if (group.length < 3) throw new Error('a bridge needs three nodes');
  const order = shuffled(group, random);
  const middle = order[0];
  const half = Math.ceil((order.length - 1) / 2);
  const left = order.slice(1, 1 + half);
  const right = order.slice(1 + half);
  return {
    label: `bridge ${names(left)} <${middle.name}> ${names(right)}`,
    cuts: apart(left, right),
  };
}

/** `clients` cannot reach `servers` (workers cut from some lock-server replicas, a replica from its database). */
export function cutOff(clients: readonly NetNode[], servers: readonly NetNode[]): Partition {
  return { label: `cut ${names(clients)} from ${names(servers)}`, cuts: apart(clients, servers) };
}

/** Every ordered pair (from, to) a partition drops: what `PacketFilter.cut` is told. */
export function droppedPairs(partition: Partition): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  for (const cut of partition.cuts)
    for (const a of cut.from)
      for (const b of cut.to) if (a.name !== b.name) pairs.push([a.name, b.name]);
  return pairs;
}

/** Puts `partition` in force (on top of whatever is already cut). */
export function applyPartition(filter: PacketFilter, partition: Partition): void {
  for (const cut of partition.cuts) filter.cut([...cut.from], [...cut.to]);
}
