import { randomUUID } from 'node:crypto';
import { migratedDatabase, startEtcd } from '@dlock/testing';
import { startInProcess, type RunningLockServer } from './in-process';

/**
 * The backends the conformance suite runs against (FR-09: identical codes and
 * bodies). Add a fixture here to run every conformance spec against it.
 */
export interface BackendFixture {
  name: string;
  /** A lock-server on a fresh, empty backend; `env` overrides LOCK_* settings. */
  start(env?: Record<string, string>): Promise<RunningLockServer & { replica: Replica }>;
}

/** Another lock-server on the same backend (a second replica behind one Service). */
type Replica = (env?: Record<string, string>) => Promise<RunningLockServer>;

export const pgBackend: BackendFixture = {
  name: 'pg',
  async start(env = {}) {
    const url = await migratedDatabase('lockdb');
    const replica: Replica = (more = {}) =>
      startInProcess({ LOCK_BACKEND: 'pg', LOCKDB_URL: url, ...env, ...more });
    return { ...(await replica()), replica };
  },
};

/** A single etcd member of its own (loopback, free ports, data under .tmp/), stopped with the server. */
export const etcdBackend: BackendFixture = {
  name: 'etcd',
  async start(env = {}) {
    const etcd = await startEtcd({ label: 'conformance' });
    const replica: Replica = (more = {}) =>
      startInProcess({
        LOCK_BACKEND: 'etcd',
        ETCD_ENDPOINTS: etcd.endpoints.join(','),
        ...env,
        ...more,
      });
    try {
      const server = await replica();
      return {
        url: server.url,
        app: server.app,
        replica,
        async stop() {
          await server.stop();
          await etcd.stop();
        },
      };
    } catch (err) {
      await etcd.stop();
      throw err;
    }
  },
};

/**
 * The harness's memory backend (the deterministic simulation's store), held to
 * the same suite; a fresh named instance per start, shared by its replicas.
 */
export const memoryBackend: BackendFixture = {
  name: 'memory',
  async start(env = {}) {
    const instance = randomUUID();
    const replica: Replica = (more = {}) =>
      startInProcess({
        LOCK_BACKEND: 'memory',
        LOCK_MEMORY_INSTANCE: instance,
        DLOCK_HARNESS: '1',
        ...env,
        ...more,
      });
    return { ...(await replica()), replica };
  },
};

/** LOCK_TEST_BACKEND=pg|etcd|memory narrows a local run to one backend (unset: all of them). */
export const BACKENDS: BackendFixture[] = [pgBackend, etcdBackend, memoryBackend].filter(
  (b) => !process.env.LOCK_TEST_BACKEND || b.name === process.env.LOCK_TEST_BACKEND,
);
