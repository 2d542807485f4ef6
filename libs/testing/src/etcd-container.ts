import { execFileSync } from 'node:child_process';
import type { EtcdCluster, EtcdClusterOptions, EtcdMember } from './etcd';

interface StartedEtcd {
  id: string;
  clientUrl: string;
  stop(): Promise<unknown>;
}
// The run's backend choice lives in one CommonJS file the ESM global setup shares.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const backends = require('../../../test/test-backends.js') as {
  BACKEND_ENV: string;
  startEtcdContainer(opts: { heartbeatMs: number; electionMs: number }): Promise<StartedEtcd>;
};

/** True when the global setup chose testcontainers for this run (DLOCK_TEST_CONTAINERS=1). */
export function containersBackend(): boolean {
  return process.env[backends.BACKEND_ENV] === 'containers';
}

/**
 * A one-member etcd in a container, shaped as the process cluster is. Pause
 * and resume are `docker pause`/`unpause` (the docker CLI must be present).
 */
export async function startEtcdContainerCluster(
  opts: Omit<EtcdClusterOptions, 'members'>,
): Promise<EtcdCluster> {
  const started = await backends.startEtcdContainer({
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
