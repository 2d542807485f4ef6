import { lockServerProofs, registerAudience, registerProofSource, TcpProxy } from '@dlock/testing';
import { AppProcess } from './infra/app-process.infra';
import { LockRecorder } from './infra/lock-recorder.infra';
import type { SystemNet } from './nemesis/system-net.nemesis';

/**
 * One lock-server replica with what stands in front of it: its own recorder
 * and fault proxy, so a fault can target one replica while the checkers read
 * every recorder (docs/harness.md, "Replicas").
 */
export interface LockReplica {
  index: number;
  server: AppProcess;
  recorder: LockRecorder;
  net: TcpProxy;
}

/**
 * `count` lock-server processes on one backend, at once. With a SystemNet each
 * joins its own cgroup at every spawn, restarts included, so a cut stays true.
 */
export function startLockReplicas(
  count: number,
  env: Record<string, string>,
  net: SystemNet | null,
): Promise<AppProcess[]> {
  if (!Number.isInteger(count) || count < 1)
    throw new Error(`lockReplicas must be a positive integer, not ${count}`);
  return Promise.all(
    Array.from({ length: count }, (_, i) => {
      const node = net?.replicaNode(i);
      return AppProcess.start('lock-server', env, {
        name: count === 1 ? 'lock-server' : `lock-server-${i}`,
        onSpawn: net && node ? (pid) => net.filter.join(node, pid) : undefined,
      });
    }),
  );
}

/** The recorder and the faultable link in front of one lock-server replica. */
export async function startLockFront(
  server: AppProcess,
): Promise<{ recorder: LockRecorder; net: TcpProxy }> {
  const recorder = await LockRecorder.start(server.port);
  const net = await TcpProxy.start({ target: { port: recorder.port } });
  // Both stand in front of the lock-server: a request through them is addressed to it.
  registerAudience(recorder.url, 'lock-server');
  registerAudience(net.url, 'lock-server');
  registerProofSource(recorder.url, lockServerProofs);
  registerProofSource(net.url, lockServerProofs);
  return { recorder, net };
}
