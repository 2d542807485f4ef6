import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { EtcdCluster, EtcdClusterOptions, EtcdMember } from './etcd';

interface StartedEtcd {
  id: string;
  clientUrl: string;
  stop(): Promise<unknown>;
}
interface TestBackends {
  BACKEND_ENV: string;
  startEtcdContainer(opts: { heartbeatMs: number; electionMs: number }): Promise<StartedEtcd>;
}

/**
 * The run's backend choice lives in one CommonJS file the ESM global setup
 * shares (test/test-backends.js). It is loaded when first asked: the benches
 * run this library from dist/, one level deeper, where a fixed relative path
 * would miss it.
 */
let loaded: TestBackends | undefined;
function backends(): TestBackends {
  if (loaded) return loaded;
  const file = ['../../../test/test-backends.js', '../../../../test/test-backends.js']
    .map((rel) => path.join(__dirname, rel))
    .find((candidate) => existsSync(candidate));
  if (file === undefined) throw new Error('test/test-backends.js not found above ' + __dirname);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  loaded = require(file) as TestBackends;
  return loaded;
}

/** True when the global setup chose testcontainers for this run (DLOCK_TEST_CONTAINERS=1). */
export function containersBackend(): boolean {
  return process.env[backends().BACKEND_ENV] === 'containers';
}

/**
 * A one-member etcd in a container, shaped as the process cluster is. Pause
 * and resume are `docker pause`/`unpause` (the docker CLI must be present).
 */
export async function startEtcdContainerCluster(
  opts: Omit<EtcdClusterOptions, 'members'>,
): Promise<EtcdCluster> {
  const started = await backends().startEtcdContainer({
    heartbeatMs: opts.heartbeatMs ?? 50,
    electionMs: opts.electionMs ?? 500,
  });
  let stopped = false;
  let isPaused = false;
  const docker = (verb: 'pause' | 'unpause') =>
    execFileSync('docker', [verb, started.id], { stdio: 'ignore' });
  const member: EtcdMember = {
    name: 'm1',
    clientUrl: started.clientUrl,
    peerUrl: '',
    dataDir: '',
    running: () => !stopped,
    paused: () => isPaused,
    pause() {
      docker('pause');
      isPaused = true;
    },
    resume() {
      if (isPaused) docker('unpause');
      isPaused = false;
    },
    async kill() {
      if (stopped) return;
      stopped = true;
      await started.stop();
    },
    output: () => '',
  };
  return {
    members: [member],
    endpoints: [member.clientUrl],
    leader: async () => member,
    waitForLeader: async () => member,
    async stop() {
      member.resume();
      await member.kill();
    },
  };
}
