import type { ChildProcess } from 'node:child_process';
import { signalGroup, spawnGroup } from './children';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { containersBackend, startEtcdContainerCluster } from './etcd-container';
import { listensOn } from './port-owner';
import { freePort, REPO_ROOT, waitFor } from './process';

/**
 * Real etcd members on loopback for the etcd backend tests and benchmarks
 * (Debian's etcd-server 3.4; `ETCD_BIN` overrides the binary). Every member
 * gets its own free client and peer ports (never 2379/2380, where a system
 * etcd may listen) and a data dir under `.tmp/`.
 */

export interface EtcdMember {
  name: string;
  clientUrl: string;
  peerUrl: string;
  dataDir: string;
  /** The etcd process (absent for a container member, etcd-container.ts). */
  proc?: ChildProcess;
  /** True until the process exited (SIGKILL, crash). */
  running(): boolean;
  paused(): boolean;
  /** SIGSTOP: the member stops answering but keeps its sockets open. */
  pause(): void;
  resume(): void;
  /** SIGKILL and wait for the exit. */
  kill(): Promise<void>;
  output(): string;
}

export interface EtcdCluster {
  members: EtcdMember[];
  /** Client URLs of every member, for ETCD_ENDPOINTS. */
  endpoints: string[];
  /** The member the running members agree is leader (polls until one is). */
  leader(timeoutMs?: number): Promise<EtcdMember>;
  /** Waits until a running, unpaused member reports a leader. */
  waitForLeader(timeoutMs?: number): Promise<EtcdMember>;
  stop(): Promise<void>;
}

export interface EtcdClusterOptions {
  members?: number;
  /** Raft heartbeat; etcd's minimum lease TTL is 1.5 election timeouts, rounded up to seconds. */
  heartbeatMs?: number;
  electionMs?: number;
  label?: string;
  /** Parent of the data dirs; default `<repo>/.tmp`. */
  dataRoot?: string;
  /** Member i listens on hosts[i] (a loopback address of its own, for partitions); default 127.0.0.1. */
  hosts?: string[];
  /** Called with each member's pid right after its spawn (the harness puts it in its cgroup). */
  onSpawn?: (name: string, pid: number) => void;
}

interface MemberStatus {
  memberId: string;
  leaderId: string;
}

/** etcd's JSON gateway: status of one member (its id and the leader it follows). */
async function memberStatus(clientUrl: string, timeoutMs = 500): Promise<MemberStatus | null> {
  try {
    const res = await fetch(`${clientUrl}/v3/maintenance/status`, {
      method: 'POST',
      body: '{}',
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!res.ok) return null;
    const body = (await res.json()) as { header?: { member_id?: string }; leader?: string };
    if (!body.header?.member_id) return null;
    return { memberId: body.header.member_id, leaderId: body.leader ?? '0' };
  } catch {
    return null;
  }
}

/** A cluster whose ports another process took first is started again on new ones, this many times. */
const PORT_RACE_ATTEMPTS_MAX = 3;

export async function startEtcdCluster(opts: EtcdClusterOptions = {}): Promise<EtcdCluster> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startEtcdClusterOnce(opts);
    } catch (err) {
      if (!(err instanceof PortTakenError) || attempt >= PORT_RACE_ATTEMPTS_MAX) throw err;
    }
  }
}

class PortTakenError extends Error {}

type MemberSpec = Pick<EtcdMember, 'name' | 'clientUrl' | 'peerUrl' | 'dataDir'>;

/** What every member of one cluster is started with. */
interface ClusterArgs {
  bin: string;
  initialCluster: string;
  token: string;
  heartbeatMs: number;
  electionMs: number;
  onSpawn?: (name: string, pid: number) => void;
}

async function startEtcdClusterOnce(opts: EtcdClusterOptions): Promise<EtcdCluster> {
  const count = opts.members ?? 1;
  const label = (opts.label ?? 'etcd').replace(/[^a-z0-9-]/gi, '-');
  const root = path.join(
    // tmpfs when the machine has one: etcd fsyncs every commit, and a loaded CI disk
    // turns that into election-length stalls that are not what the tests measure.
    opts.dataRoot ?? (existsSync('/dev/shm') ? '/dev/shm' : path.join(REPO_ROOT, '.tmp')),
    `${label}-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`,
  );
  const specs = await memberSpecs(count, root, opts.hosts);
  const args: ClusterArgs = {
    bin: process.env.ETCD_BIN ?? 'etcd',
    initialCluster: specs.map((s) => `${s.name}=${s.peerUrl}`).join(','),
    token: path.basename(root),
    heartbeatMs: opts.heartbeatMs ?? 50,
    electionMs: opts.electionMs ?? 500,
    onSpawn: opts.onSpawn,
  };
  const members = specs.map((s) => spawnMember(s, args));
  const findLeader = leaderFinder(members);
  const cluster: EtcdCluster = {
    members,
    endpoints: members.map((m) => m.clientUrl),
    leader: (timeoutMs = 10_000) => waitFor(findLeader, timeoutMs, 'an etcd leader'),
    waitForLeader: (timeoutMs = 10_000) => waitFor(findLeader, timeoutMs, 'an etcd leader'),
    async stop() {
      for (const m of members) m.resume();
      await Promise.all(members.map((m) => m.kill()));
      rmSync(root, { recursive: true, force: true });
    },
  };
  try {
    await awaitElection(members, findLeader);
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}

/** Names, free client and peer ports (on the member's own host) and data dirs. */
async function memberSpecs(
  count: number,
  root: string,
  hosts: string[] | undefined,
): Promise<MemberSpec[]> {
  const specs: MemberSpec[] = [];
  for (let i = 0; i < count; i++) {
    const name = `m${i + 1}`;
    const host = hosts?.[i] ?? '127.0.0.1';
    specs.push({
      name,
      clientUrl: `http://${host}:${await freePort()}`,
      peerUrl: `http://${host}:${await freePort()}`,
      dataDir: path.join(root, name),
    });
  }
  return specs;
}

/** Starts one member's process, keeping the tail of its output for failure messages. */
function spawnMember(s: MemberSpec, args: ClusterArgs): EtcdMember {
  mkdirSync(s.dataDir, { recursive: true });
  const proc = spawnGroup(
    args.bin,
    [
      `--name=${s.name}`,
      `--data-dir=${s.dataDir}`,
      `--listen-client-urls=${s.clientUrl}`,
      `--advertise-client-urls=${s.clientUrl}`,
      `--listen-peer-urls=${s.peerUrl}`,
      `--initial-advertise-peer-urls=${s.peerUrl}`,
      `--initial-cluster=${args.initialCluster}`,
      '--initial-cluster-state=new',
      `--initial-cluster-token=${args.token}`,
      `--heartbeat-interval=${args.heartbeatMs}`,
      `--election-timeout=${args.electionMs}`,
      '--logger=zap',
      '--log-level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  if (proc.pid !== undefined) args.onSpawn?.(s.name, proc.pid);
  let out = '';
  const keep = (chunk: Buffer) => {
    out += chunk.toString();
    if (out.length > 100_000) out = out.slice(-50_000);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  // A missing binary surfaces as an exit with the reason in output(), not an unhandled 'error'.
  let spawnFailed = false;
  proc.on('error', (err) => {
    spawnFailed = true;
    keep(Buffer.from(`spawn ${args.bin} failed: ${err.message}\n`));
  });
  const exited = new Promise<void>((resolve) => {
    proc.once('exit', () => resolve());
    proc.once('error', () => resolve());
  });
  let isPaused = false;
  const running = () => !spawnFailed && proc.exitCode === null && proc.signalCode === null;
  return {
    ...s,
    proc,
    running,
    paused: () => isPaused,
    pause() {
      if (running() && signalGroup(proc, 'SIGSTOP') && proc.pid !== undefined) {
        awaitStopped(proc.pid);
      }
      isPaused = true;
    },
    resume() {
      if (running()) signalGroup(proc, 'SIGCONT');
      isPaused = false;
    },
    async kill() {
      if (!running()) return;
      signalGroup(proc, 'SIGKILL');
      await exited;
    },
    output: () => out,
  };
}

/** The member the running, unpaused members agree is leader, or null while they do not. */
function leaderFinder(members: EtcdMember[]): () => Promise<EtcdMember | null> {
  const live = () => members.filter((m) => m.running() && !m.paused());
  return async () => {
    const statuses = await Promise.all(
      live().map(async (m) => ({ m, st: await memberStatus(m.clientUrl) })),
    );
    for (const { st } of statuses) {
      if (!st || st.leaderId === '0') continue;
      const leader = statuses.find((x) => x.st?.memberId === st.leaderId);
      if (leader) return leader.m;
    }
    return null;
  };
}

/**
 * Waits for a leader; throws with the output of a member that exited, or
 * PortTakenError when another process holds a member's port.
 */
async function awaitElection(
  members: EtcdMember[],
  findLeader: () => Promise<EtcdMember | null>,
): Promise<void> {
  const count = members.length;
  await waitFor(
    async () => {
      const dead = members.find((m) => !m.running());
      // Another jest worker was handed the same free port and bound it first (port-owner.ts).
      if (dead?.output().includes('address already in use')) return dead;
      if (dead) throw new Error(`etcd ${dead.name} exited:\n${dead.output().slice(-2000)}`);
      return findLeader();
    },
    20_000,
    `etcd (${count} member${count > 1 ? 's' : ''}) to elect a leader`,
  );
  for (const m of members) {
    const port = Number(new URL(m.clientUrl).port);
    if (!m.running() || !(await listensOn(m.proc?.pid ?? -1, port)))
      throw new PortTakenError(`etcd ${m.name}: port ${port} is answered by another process`);
  }
}

/**
 * One member: the conformance suite's etcd; a container when the run uses
 * testcontainers (README, "Test backends"). Multi-member clusters stay processes.
 */
export function startEtcd(opts: Omit<EtcdClusterOptions, 'members'> = {}): Promise<EtcdCluster> {
  if (containersBackend()) return startEtcdContainerCluster(opts);
  return startEtcdCluster({ ...opts, members: 1 });
}

const STOP_WAIT_MS = 2_000;

/**
 * SIGSTOP takes effect asynchronously: a test that pauses a member and at once
 * expects it silent must not race the kernel. Waits (bounded, synchronously, as
 * pause() is) until /proc shows the process stopped; throws if it never does,
 * so a test fails on its fixture rather than on an answer a stopped member
 * seemed to give. Without /proc (not Linux) it returns at once.
 */
function awaitStopped(pid: number): void {
  const nap = new Int32Array(new SharedArrayBuffer(4));
  const until = Date.now() + STOP_WAIT_MS;
  for (;;) {
    const state = stateOf(pid);
    if (state === null || state === 'T' || state === 't') return; // no /proc, or gone: silent too
    if (Date.now() >= until) throw new Error(`etcd pid ${pid} not stopped after SIGSTOP: ${state}`);
    Atomics.wait(nap, 0, 0, 1);
  }
}

/** The process's state letter from /proc/<pid>/stat ("pid (comm) state ..."), or null. */
function stateOf(pid: number): string | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.charAt(text.lastIndexOf(')') + 2);
  } catch {
    return null;
  }
}
