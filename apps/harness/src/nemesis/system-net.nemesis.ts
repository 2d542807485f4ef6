import { PacketFilter, type NetNode } from '../infra/packet-filter.infra';

/** Systems of this process so far: each gets a /24 of its own on loopback. */
let systemsOpened = 0;

/**
 * The addresses and cgroups of one system's partitionable processes
 * (docs/harness.md, "Partitions"): the lock-server replicas, the etcd members
 * and, on pg, the lock database's front (a forwarder on an address of its
 * own: the shared PostgreSQL listens on 127.0.0.1 only, where everything
 * else is too). Only where a PacketFilter can run: root, nftables, cgroup v2.
 */
export class SystemNet {
  private readonly replicaNodes: NetNode[] = [];
  private readonly etcdNodes = new Map<string, NetNode>();

  private constructor(
    readonly filter: PacketFilter,
    private readonly prefix: string,
  ) {}

  /** The system's network, or why there is none (the soak lists the kinds it leaves out). */
  static tryOpen(): { net: SystemNet | null; why: string } {
    try {
      const filter = PacketFilter.open();
      const n = systemsOpened++;
      // 127.0.0.x belongs to the partition tests; 127.<pid>.<n>.x to this process's systems.
      const prefix = `127.${1 + (process.pid % 250)}.${n % 256}.`;
      return { net: new SystemNet(filter, prefix), why: '' };
    } catch (err) {
      return { net: null, why: `no packet filter: ${(err as Error).message}` };
    }
  }

  /** The lock database's front (pg backend). */
  get lockdbAddress(): string {
    return `${this.prefix}2`;
  }

  lockdbNode(): NetNode {
    return this.filter.node('lockdb', this.lockdbAddress);
  }

  /** Hosts of etcd members m1, m2, ...: `startEtcdCluster({ hosts, onSpawn })`. */
  etcdHosts(members: number): string[] {
    return Array.from({ length: members }, (_, i) => `${this.prefix}${11 + i}`);
  }

  /** Puts etcd member `name` (m1, m2, ...) in its cgroup. */
  joinEtcd(name: string, pid: number, hosts: readonly string[]): void {
    const node = this.filter.node(`etcd-${name}`, hosts[Number(name.slice(1)) - 1]);
    this.etcdNodes.set(name, node);
    this.filter.join(node, pid);
  }

  etcdNode(name: string): NetNode {
    const node = this.etcdNodes.get(name);
    if (!node) throw new Error(`etcd member ${name} has no node`);
    return node;
  }

  etcdNodeList(): NetNode[] {
    return [...this.etcdNodes.values()];
  }

  /** The node of lock-server replica `i`; its process joins it at every spawn. */
  replicaNode(i: number): NetNode {
    this.replicaNodes[i] ??= this.filter.node(`lock-server-${i}`, `${this.prefix}${31 + i}`);
    return this.replicaNodes[i];
  }

  close(): void {
    this.filter.close();
  }
}
