import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';

/**
 * Real network partitions on one machine (docs/harness.md, "Partitions").
 * Every process of a run is a node with an address of its own on loopback
 * (127.0.0.0/8) that its peers dial, and a cgroup (v2) of its own that marks
 * the packets it sends. A cut from A to B is two nftables rules in a table of
 * the run's own: packets A's processes send to B's address, and packets sent
 * from A's address to a socket of B's processes (A's answers on connections B
 * opened). Neither side sees a proxy; the kernel drops the packets. The table
 * and the cgroups are removed at the end, on exit, and by the next run if this
 * one was killed (their names carry the owning pid).
 */

const CGROUP2_ROOTS = ['/sys/fs/cgroup/unified', '/sys/fs/cgroup'];
/** nftables names a cgroupv2 path relative to this directory. */
const NFT_CGROUP_BASE = '/sys/fs/cgroup';
const TABLE_PREFIX = 'dlock_nemesis_';

export interface NetNode {
  name: string;
  /** The loopback address its peers dial (127.0.0.x). */
  address: string;
}

export class PacketFilterError extends Error {}

function nft(args: string[]): string {
  try {
    return execFileSync('nft', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new PacketFilterError(`nft ${args.join(' ')}: ${e.stderr?.trim() || e.message}`);
  }
}

function cgroup2Root(): string {
  for (const root of CGROUP2_ROOTS) {
    if (
      existsSync(path.join(root, 'cgroup.procs')) &&
      existsSync(path.join(root, 'cgroup.controllers'))
    )
      return root;
  }
  throw new PacketFilterError(
    'no cgroup v2 hierarchy is mounted (looked in /sys/fs/cgroup[/unified])',
  );
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Tables and cgroups left by runs whose process is gone (killed before their cleanup ran). */
export function sweepStalePartitions(): void {
  const listed = nft(['-j', 'list', 'tables']);
  const tables = (JSON.parse(listed) as { nftables: Array<{ table?: { name: string } }> }).nftables
    .map((e) => e.table?.name)
    .filter((n): n is string => n?.startsWith(TABLE_PREFIX) === true);
  for (const name of tables) {
    const pid = Number(name.slice(TABLE_PREFIX.length).split('_')[0]);
    if (!alive(pid)) nft(['delete', 'table', 'inet', name]);
  }
  const root = cgroup2Root();
  for (const dir of readdirSync(root).filter((d) => d.startsWith(TABLE_PREFIX))) {
    const pid = Number(dir.slice(TABLE_PREFIX.length).split('_')[0]);
    if (!alive(pid)) removeCgroupTree(path.join(root, dir));
  }
}

/** Child cgroups first (rmdir needs them empty); processes still in one are left to their owner. */
function removeCgroupTree(dir: string): void {
  if (!existsSync(dir)) return;
  for (const child of readdirSync(dir, { withFileTypes: true })) {
    if (child.isDirectory()) {
      try {
        rmdirSync(path.join(dir, child.name));
      } catch {
        // still has a process: its own run removes it
      }
    }
  }
  try {
    rmdirSync(dir);
  } catch {
    // idem
  }
}

/**
 * One run's partitions. `open()` makes the table and the run's cgroup;
 * `node()` names a process's address and cgroup; `join()` puts a process in
 * it right after spawn, before it dials anyone; `cut()` and `heal()` change
 * the rules; `close()` removes everything.
 */
export class PacketFilter {
  private readonly nodes = new Map<string, NetNode>();
  private readonly onExit = () => this.close();
  private closed = false;

  private constructor(
    readonly table: string,
    private readonly cgroupDir: string,
  ) {}

  static open(): PacketFilter {
    sweepStalePartitions();
    const table = `${TABLE_PREFIX}${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
    const cgroupDir = path.join(cgroup2Root(), table);
    mkdirSync(cgroupDir);
    nft(['add', 'table', 'inet', table]);
    // Priority -10: before any other filter on this host sees the packet.
    nft(['add', 'chain', 'inet', table, 'out', '{ type filter hook output priority -10; }']);
    nft(['add', 'chain', 'inet', table, 'in', '{ type filter hook input priority -10; }']);
    const filter = new PacketFilter(table, cgroupDir);
    process.once('exit', filter.onExit);
    return filter;
  }

  node(name: string, address: string): NetNode {
    if (!/^[a-z0-9-]+$/.test(name)) throw new PacketFilterError(`node name ${name}: a-z, 0-9, -`);
    if (!/^127\.\d+\.\d+\.\d+$/.test(address))
      throw new PacketFilterError(`node ${name}: ${address} is not a loopback address`);
    mkdirSync(path.join(this.cgroupDir, name), { recursive: true });
    const node = { name, address };
    this.nodes.set(name, node);
    return node;
  }

  /** Moves `pid` into `node`'s cgroup: the packets it sends from now on are `node`'s. */
  join(node: NetNode, pid: number): void {
    writeFileSync(path.join(this.cgroupDir, node.name, 'cgroup.procs'), String(pid));
  }

  /** The pids in `node`'s cgroup (evidence that a process is where the rules expect it). */
  members(node: NetNode): number[] {
    const text = readFileSync(path.join(this.cgroupDir, node.name, 'cgroup.procs'), 'utf8');
    return text.split('\n').filter(Boolean).map(Number);
  }

  /** Nothing `from` sends reaches `to` (one way; cut both ways for a full partition). */
  cut(from: NetNode[], to: NetNode[]): void {
    for (const a of from) {
      for (const b of to) {
        if (a.name === b.name) continue;
        nft([
          'add',
          'rule',
          'inet',
          this.table,
          'out',
          ...this.sentBy(a),
          'ip',
          'daddr',
          b.address,
          'drop',
        ]);
        nft([
          'add',
          'rule',
          'inet',
          this.table,
          'in',
          ...this.receivedBy(b),
          'ip',
          'saddr',
          a.address,
          'drop',
        ]);
      }
    }
  }

  /** Every rule removed: all nodes reach each other again. */
  heal(): void {
    nft(['flush', 'chain', 'inet', this.table, 'out']);
    nft(['flush', 'chain', 'inet', this.table, 'in']);
  }

  /** How many rules are in force (evidence for the run's timeline). */
  rules(): number {
    const text = nft(['list', 'table', 'inet', this.table]);
    return text.split('\n').filter((l) => l.trim().endsWith(' drop')).length;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    process.removeListener('exit', this.onExit);
    try {
      nft(['delete', 'table', 'inet', this.table]);
    } catch {
      // already gone
    }
    removeCgroupTree(this.cgroupDir);
  }

  private cgroupPath(node: NetNode): string {
    return path.relative(NFT_CGROUP_BASE, path.join(this.cgroupDir, node.name));
  }

  /** Packets sent by a socket of `node`'s processes. */
  private sentBy(node: NetNode): string[] {
    const rel = this.cgroupPath(node);
    return ['socket', 'cgroupv2', 'level', String(rel.split('/').length - levelBase()), `"${rel}"`];
  }

  /** Packets arriving at a socket of `node`'s processes. */
  private receivedBy(node: NetNode): string[] {
    return this.sentBy(node);
  }
}

/** Path components of the cgroup2 mount below NFT_CGROUP_BASE ('unified' counts one). */
function levelBase(): number {
  const rel = path.relative(NFT_CGROUP_BASE, cgroup2Root());
  return rel === '' ? 0 : rel.split('/').length;
}
