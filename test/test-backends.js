'use strict';
// Where the test run's PostgreSQL and etcd come from (README, "Test backends"):
// embedded processes by default; testcontainers when DLOCK_TEST_CONTAINERS=1
// and a Docker engine answers. Plain CommonJS so the ESM global setup and the
// TypeScript tests share it.

const CONTAINERS_ENV = 'DLOCK_TEST_CONTAINERS';
/** Set by the global setup for the test workers: `embedded` or `containers`. */
const BACKEND_ENV = 'DLOCK_TEST_BACKEND';
/** The run's own Docker network, created by the global setup: every container joins it. */
const NETWORK_ENV = 'DLOCK_TEST_DOCKER_NETWORK';
// The official images; a machine without a registry names its local ones, as compose does
// (scripts/images-local.sh, deploy/docker/local-images.env).
const PG_IMAGE = process.env.DLOCK_POSTGRES_IMAGE || 'postgres:17-alpine';
const ETCD_IMAGE = process.env.DLOCK_ETCD_IMAGE || 'gcr.io/etcd-development/etcd:v3.5.21';

/** What the environment asks for; a value other than 1, 0 or unset is refused, not guessed. */
function requestedBackend(env) {
  const value = env[CONTAINERS_ENV];
  if (value === undefined || value === '' || value === '0') return 'embedded';
  if (value === '1') return 'containers';
  throw new Error(
    `${CONTAINERS_ENV} must be 1 (testcontainers) or 0/unset (embedded processes), not ${JSON.stringify(value)}`,
  );
}

/**
 * The backend of this run. Asked for containers without a reachable Docker
 * engine, it fails: falling back would report a run on the other path.
 */
async function selectTestBackend(env, dockerReachable) {
  const backend = requestedBackend(env);
  if (backend === 'containers' && !(await dockerReachable())) {
    throw new Error(
      `${CONTAINERS_ENV}=1 asks for testcontainers, but no Docker engine is reachable ` +
        '(DOCKER_HOST, /var/run/docker.sock or ~/.testcontainers.properties). ' +
        `Unset ${CONTAINERS_ENV} to use the embedded PostgreSQL and etcd processes.`,
    );
  }
  return backend;
}

/** True when testcontainers finds a container runtime. */
async function dockerReachable() {
  try {
    const { getContainerRuntimeClient } = require('testcontainers');
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

/**
 * A bridge network of this run's own, so its containers need no network of the engine's
 * (an engine started without its default bridge has none) and reach nothing else.
 */
async function startTestNetwork() {
  const { Network } = require('testcontainers');
  const network = await new Network().start();
  return { name: network.getName(), stop: () => network.stop() };
}

/** The network the global setup created for this run (startTestNetwork). */
function testNetwork() {
  const name = process.env[NETWORK_ENV];
  if (!name) throw new Error(`${NETWORK_ENV} is unset: the global setup creates the run's network`);
  return name;
}

/** One PostgreSQL container for the run, tuned as the embedded one is (global-setup.mjs). */
async function startPostgresContainer() {
  const { PostgreSqlContainer } = require('@testcontainers/postgresql');
  const container = await new PostgreSqlContainer(PG_IMAGE)
    .withNetworkMode(testNetwork())
    .withUsername('postgres')
    .withPassword('postgres')
    .withDatabase('postgres')
    .withCommand(['postgres', '-c', 'max_connections=400', '-c', 'fsync=off'])
    .start();
  return { url: container.getConnectionUri(), stop: () => container.stop() };
}

/** One etcd member in a container, with the raft timings the process members get. */
async function startEtcdContainer({ heartbeatMs, electionMs }) {
  const { GenericContainer, Wait } = require('testcontainers');
  const container = await new GenericContainer(ETCD_IMAGE)
    .withNetworkMode(testNetwork())
    .withCommand([
      '/usr/local/bin/etcd',
      '--name=m1',
      '--data-dir=/var/lib/etcd',
      '--listen-client-urls=http://0.0.0.0:2379',
      '--advertise-client-urls=http://127.0.0.1:2379',
      `--heartbeat-interval=${heartbeatMs}`,
      `--election-timeout=${electionMs}`,
      '--log-level=warn',
    ])
    .withTmpFs({ '/var/lib/etcd': 'rw' })
    .withExposedPorts(2379)
    .withWaitStrategy(Wait.forHttp('/health', 2379))
    .start();
  return {
    id: container.getId(),
    clientUrl: `http://${container.getHost()}:${container.getMappedPort(2379)}`,
    stop: () => container.stop({ timeout: 0 }),
  };
}

module.exports = {
  BACKEND_ENV,
  CONTAINERS_ENV,
  NETWORK_ENV,
  dockerReachable,
  requestedBackend,
  selectTestBackend,
  startEtcdContainer,
  startPostgresContainer,
  startTestNetwork,
};
