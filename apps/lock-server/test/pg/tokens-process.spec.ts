import path from 'node:path';
import { REPO_ROOT, migratedDatabase, spawnApp, testAuthEnv, spawnGroup } from '@dlock/testing';
import { LockApi } from '../support/lock-client';

/**
 * pg-only token properties of the built lock-server process (dist/): a restart
 * never rewinds fencing_token_seq, and bad configuration stops it. Kept apart
 * from tokens.spec.ts, whose in-process tests the mutation run uses.
 */
describe('pg backend: the lock-server process and fencing_token_seq', () => {
  let dbUrl: string;

  beforeAll(async () => {
    dbUrl = await migratedDatabase('lockdb');
  });

  it('a restarted lock-server process continues above every token issued', async () => {
    const env = { LOCK_BACKEND: 'pg', LOCKDB_URL: dbUrl };
    const first = await spawnApp('lock-server', env);
    let highest = 0n;
    try {
      const remote = new LockApi(first.url);
      const s = await remote.session('r1');
      for (let i = 0; i < 5; i++) {
        const g = await remote.acquire(`restart:${i}`, s, 'r1');
        highest = BigInt(g.body.fencingToken);
      }
    } finally {
      await first.kill();
    }
    const second = await spawnApp('lock-server', env);
    try {
      const remote = new LockApi(second.url);
      const s = await remote.session('r2');
      // restart:0 is still held by r1's session (a killed server releases nothing).
      expect((await remote.acquire('restart:0', s, 'r2')).status).toBe(409);
      const g = await remote.acquire('restart:new', s, 'r2');
      expect(BigInt(g.body.fencingToken)).toBeGreaterThan(highest);
    } finally {
      await second.stop();
    }
  });

  it('a bad environment value stops the process, naming the variable', async () => {
    const main = path.join(REPO_ROOT, 'dist', 'apps', 'lock-server', 'main.js');
    const auth = await testAuthEnv();
    for (const [env, name] of [
      [{ LOCK_BACKEND: 'pg' }, 'LOCKDB_URL'],
      [{ LOCK_BACKEND: 'mysql', LOCKDB_URL: dbUrl }, 'LOCK_BACKEND'],
      [{ LOCKDB_URL: dbUrl, LOCK_SESSION_TTL_MS: '500' }, 'LOCK_SESSION_TTL_MS'],
      [{ LOCKDB_URL: dbUrl, LOCK_WAITERS_MAX: 'many' }, 'LOCK_WAITERS_MAX'],
    ] as const) {
      const { code, output } = await new Promise<{ code: number | null; output: string }>(
        (resolve) => {
          const proc = spawnGroup(process.execPath, [main], {
            env: { PATH: process.env.PATH ?? '', PORT: '0', ...auth, ...env },
            stdio: ['ignore', 'pipe', 'pipe'],
          });
          let out = '';
          proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
          proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
          proc.on('exit', (c) => resolve({ code: c, output: out }));
        },
      );
      expect(code).toBe(1);
      expect(output).toContain(name);
    }
  });
});
