import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import {
  DEV_POLICY_PATH,
  http,
  spawnApp,
  startEtcdCluster,
  type EtcdCluster,
  type EtcdMember,
  type RunningApp,
} from '@dlock/testing';
import { PacketFilter, type NetNode } from '../src/infra/packet-filter.infra';
import { applyPartition, cutOff } from '../src/nemesis/partition.nemesis';

/**
 * Partitions are real (docs/harness.md, "Partitions"): nftables rules between
 * loopback addresses, per process cgroup. These tests show each cut takes
 * effect (connections really fail, the etcd leader really changes) and heals.
 */
jest.setTimeout(90_000);

let filter: PacketFilter;
const children: ChildProcess[] = [];

beforeAll(() => {
  filter = PacketFilter.open();
});
afterAll(() => {
  for (const c of children)
    if (c.pid !== undefined && c.exitCode === null) process.kill(-c.pid, 'SIGKILL');
  filter.close();
});
afterEach(() => filter.heal());

/** A node process running `code`, in `node`'s cgroup, in its own process group. */
function nodeProcess(node: NetNode, code: string): ChildProcess {
  const child = spawn(process.execPath, ['-e', code], {
    detached: true,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  filter.join(node, child.pid!);
  children.push(child);
  return child;
}

/** From inside `from`'s cgroup, what one connection to `to` gets: its answer, or 'timeout'. */
async function dial(from: NetNode, to: NetNode, port: number): Promise<string> {
  const child = nodeProcess(
    from,
    `setTimeout(() => {
       const c = require('net').connect({ host: '${to.address}', port: ${port} });
       c.setTimeout(800, () => { process.stdout.write('timeout'); process.exit(0); });
       c.on('data', (d) => { process.stdout.write(String(d)); process.exit(0); });
       c.on('error', (e) => { process.stdout.write(e.code); process.exit(0); });
     }, 50);`,
  );
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  await once(child, 'exit');
  return out;
}

describe('a cut between two processes', () => {
  test('drops what one side sends, one way or both, and heals', async () => {
    const a = filter.node('a', '127.0.0.11');
    const b = filter.node('b', '127.0.0.12');
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const server = nodeProcess(
      b,
      `require('net').createServer((s) => s.end('hello')).listen(${port}, '${b.address}', () => console.log('up'));`,
    );
    await once(server.stdout!, 'data');
    expect(filter.members(b)).toContain(server.pid);

    expect(await dial(a, b, port)).toBe('hello');
    filter.cut([a], [b]);
    expect(await dial(a, b, port)).toBe('timeout');
    filter.heal();
    // One way, the other direction: A's connection reaches B, B's answers never reach A.
    filter.cut([b], [a]);
    expect(await dial(a, b, port)).toBe('timeout');
    filter.heal();
    expect(filter.rules()).toBe(0);
    expect(await dial(a, b, port)).toBe('hello');
  });
});

describe('etcd members on addresses of their own', () => {
  let cluster: EtcdCluster;
  const nodes = new Map<string, NetNode>();

  beforeAll(async () => {
    const hosts = ['127.0.0.21', '127.0.0.22', '127.0.0.23'];
    cluster = await startEtcdCluster({
      members: 3,
      label: 'partitions',
      hosts,
      onSpawn: (name, pid) => {
        const node = filter.node(`etcd-${name}`, hosts[Number(name.slice(1)) - 1]);
        nodes.set(name, node);
        filter.join(node, pid);
      },
    });
  });
  afterAll(() => cluster?.stop());

  const nodeOf = (m: EtcdMember) => nodes.get(m.name)!;
  const others = (m: EtcdMember) => cluster.members.filter((x) => x !== m).map(nodeOf);

  test('an isolated leader loses its leadership to the majority, and the cluster heals', async () => {
    const old = await cluster.leader();
    filter.cut([nodeOf(old)], others(old));
    filter.cut(others(old), [nodeOf(old)]);
    // The majority elects a new leader among themselves; a write through the old one never commits.
    const majority = cluster.members.filter((m) => m !== old);
    const leaderOf = async (m: EtcdMember) => (await status(m.clientUrl))?.leader;
    await waitFor(async () => {
      const seen = await Promise.all(majority.map(leaderOf));
      const want = await Promise.all(majority.map(memberId));
      return seen[0] !== undefined && seen[0] === seen[1] && want.includes(seen[0]);
    });
    expect(await put(old.clientUrl, 'k', 'v')).toBe('failed');
    expect(await put(majority[0].clientUrl, 'k', 'v')).toBe('ok');

    filter.heal();
    await waitFor(async () => {
      const seen = await Promise.all(cluster.members.map(leaderOf));
      return seen.every((l) => l !== undefined && l !== '0' && l === seen[0]);
    });
    // The old leader may still be catching up on what the majority wrote: a write through it
    // commits once it has (the put itself waits 1.5 s at most).
    await waitFor(async () => (await put(old.clientUrl, 'k', 'v2')) === 'ok');
  });

  test('a lock-server replica cut from etcd refuses to grant; its twin grants; both grant after the heal', async () => {
    const replicas: RunningApp[] = [];
    const replicaNodes: NetNode[] = [];
    try {
      for (const i of [1, 2]) {
        const node = filter.node(`lock-server-${i}`, `127.0.0.${30 + i}`);
        replicaNodes.push(node);
        replicas.push(
          await spawnApp(
            'lock-server',
            {
              AUTH_POLICY: DEV_POLICY_PATH,
              LOCK_BACKEND: 'etcd',
              ETCD_ENDPOINTS: cluster.endpoints.join(','),
            },
            { onSpawn: (pid) => filter.join(node, pid) },
          ),
        );
      }
      const sessions = await Promise.all(replicas.map((r) => openSession(r)));
      expect(await acquire(replicas[0], sessions[0], 'cut-a')).toBe(200);

      applyPartition(filter, cutOff([replicaNodes[0]], [...nodes.values()]));
      expect(await acquire(replicas[0], sessions[0], 'cut-b')).toBe(503);
      expect(await acquire(replicas[1], sessions[1], 'cut-c')).toBe(200);

      filter.heal();
      await waitFor(async () => (await acquire(replicas[0], sessions[0], 'cut-d')) === 200, 30_000);
    } finally {
      await Promise.all(replicas.map((r) => r.stop()));
    }
  });

  test('a minority side cannot write, the majority side can', async () => {
    const [m1, m2, m3] = cluster.members;
    filter.cut([nodeOf(m1)], [nodeOf(m2), nodeOf(m3)]);
    filter.cut([nodeOf(m2), nodeOf(m3)], [nodeOf(m1)]);
    await waitFor(async () => (await put(m2.clientUrl, 'split', 'majority')) === 'ok');
    expect(await put(m1.clientUrl, 'split', 'minority')).toBe('failed');
  });
});

const OWNER = 'executor-1';

async function openSession(replica: RunningApp): Promise<string> {
  const res = await http('POST', `${replica.url}/v1/sessions`, {
    body: { ownerId: OWNER },
    headers: { 'x-owner-id': OWNER },
  });
  expect(res.status).toBe(201);
  return (res.body as { sessionId: string }).sessionId;
}

/** The status of one acquire through `replica` (answered within its own deadline). */
async function acquire(replica: RunningApp, sessionId: string, key: string): Promise<number> {
  const res = await http('POST', `${replica.url}/v1/locks/payout:${key}/acquire`, {
    body: { sessionId },
    headers: { 'x-owner-id': OWNER },
  });
  return res.status;
}

interface Status {
  leader: string;
  member: string;
}

async function status(clientUrl: string): Promise<Status | null> {
  try {
    const res = await fetch(`${clientUrl}/v3/maintenance/status`, {
      method: 'POST',
      body: '{}',
      signal: AbortSignal.timeout(500),
    });
    const body = (await res.json()) as { leader?: string; header?: { member_id?: string } };
    return { leader: body.leader ?? '0', member: body.header?.member_id ?? '' };
  } catch {
    return null;
  }
}

async function memberId(m: EtcdMember): Promise<string | undefined> {
  return (await status(m.clientUrl))?.member;
}

/** A linearizable put through one member: 'ok' once committed, 'failed' if it cannot commit within 1.5 s. */
async function put(clientUrl: string, key: string, value: string): Promise<'ok' | 'failed'> {
  try {
    const res = await fetch(`${clientUrl}/v3/kv/put`, {
      method: 'POST',
      body: JSON.stringify({
        key: Buffer.from(key).toString('base64'),
        value: Buffer.from(value).toString('base64'),
      }),
      signal: AbortSignal.timeout(1_500),
    });
    return res.ok ? 'ok' : 'failed';
  } catch {
    return 'failed';
  }
}

async function waitFor(fn: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
