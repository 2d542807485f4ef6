/**
 * Which PostgreSQL and etcd a test run uses (test/test-backends.js, README
 * "Test backends"): embedded processes unless DLOCK_TEST_CONTAINERS=1, and
 * then only with a Docker engine; never a silent fallback.
 */
// The module is CommonJS so the ESM global setup can load it too.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { selectTestBackend } = require('../test-backends.js') as {
  selectTestBackend(
    env: Record<string, string | undefined>,
    dockerReachable: () => Promise<boolean>,
  ): Promise<'embedded' | 'containers'>;
};

function probe(reachable: boolean) {
  return jest.fn(async () => reachable);
}

describe('selectTestBackend', () => {
  it.each([[undefined], [''], ['0']])(
    'DLOCK_TEST_CONTAINERS=%p: embedded processes, Docker not even asked',
    async (value) => {
      const docker = probe(true);
      await expect(selectTestBackend({ DLOCK_TEST_CONTAINERS: value }, docker)).resolves.toBe(
        'embedded',
      );
      expect(docker).not.toHaveBeenCalled();
    },
  );

  it('DLOCK_TEST_CONTAINERS=1 with a Docker engine: containers', async () => {
    const docker = probe(true);
    await expect(selectTestBackend({ DLOCK_TEST_CONTAINERS: '1' }, docker)).resolves.toBe(
      'containers',
    );
    expect(docker).toHaveBeenCalledTimes(1);
  });

  it('DLOCK_TEST_CONTAINERS=1 without a Docker engine: fails, naming the way out', async () => {
    await expect(selectTestBackend({ DLOCK_TEST_CONTAINERS: '1' }, probe(false))).rejects.toThrow(
      'DLOCK_TEST_CONTAINERS=1 asks for testcontainers, but no Docker engine is reachable ' +
        '(DOCKER_HOST, /var/run/docker.sock or ~/.testcontainers.properties). ' +
        'Unset DLOCK_TEST_CONTAINERS to use the embedded PostgreSQL and etcd processes.',
    );
  });

  it('any other value is refused, not guessed', async () => {
    const docker = probe(true);
    await expect(selectTestBackend({ DLOCK_TEST_CONTAINERS: 'yes' }, docker)).rejects.toThrow(
      'DLOCK_TEST_CONTAINERS must be 1 (testcontainers) or 0/unset (embedded processes), not "yes"',
    );
    expect(docker).not.toHaveBeenCalled();
  });
});
