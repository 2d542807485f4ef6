import { spawn } from 'node:child_process';
import path from 'node:path';
import { REPO_ROOT, migratedDatabase, spawnApp, withClient } from '@dlock/testing';
import { startInProcess, type RunningLockServer } from '../support/in-process';
import { LockApi } from '../support/lock-client';

/** pg-only token properties: fencing_token_seq is the one source, never rewound. */
describe('pg backend: fencing_token_seq', () => {
  let dbUrl: string;
  let server: RunningLockServer;
  let api: LockApi;

  beforeAll(async () => {
    dbUrl = await migratedDatabase('lockdb');
    server = await startInProcess({ LOCK_BACKEND: 'pg', LOCKDB_URL: dbUrl });
    api = new LockApi(server.url);
  });
  afterAll(() => server.stop());

  it('a token above 2^53 round-trips exactly through L4, L5, L7, L6 and L8', async () => {
    const big = 2n ** 53n + 10n;
    await withClient(dbUrl, (c) =>
      c.query(`SELECT setval('fencing_token_seq', $1)`, [big.toString()]),
    );
    const s = await api.session('big');
    const grant = await api.acquire('big:1', s, 'big');
    expect(grant.status).toBe(200);
    expect(grant.text).toContain(`"fencingToken":"${big + 1n}"`);
    const token = grant.body.fencingToken as string;
    expect(BigInt(token)).toBe(big + 1n);
    const renew = await api.renew('big:1', s, token, { ownerId: 'big' });
    expect(renew.body.fencingToken).toBe(token);
    expect((await api.inspect('big:1')).body.fencingToken).toBe(token);
    const revoke = await api.revoke('big:1', {
      operator: 'ops',
      reason: 'round-trip check',
      expectedToken: token,
    });
    expect(revoke.status).toBe(200);
    expect(revoke.body.revokedToken).toBe(token);
    expect(BigInt(revoke.body.newTokenFloor)).toBeGreaterThan(big + 1n);
    const again = await api.acquire('big:1', s, 'big');
    expect(BigInt(again.body.fencingToken)).toBeGreaterThan(BigInt(revoke.body.newTokenFloor));
    expect((await api.release('big:1', s, again.body.fencingToken)).status).toBe(204);
  });

  it('L8 writes an audit row with operator, reason, holder and both tokens', async () => {
    const s = await api.session('audited');
    const grant = await api.acquire('audit:1', s, 'audited');
    const res = await api.revoke('audit:1', {
      operator: 'ops-kim',
      reason: 'holder wedged on rail',
    });
    const rows = await withClient(dbUrl, (c) =>
      c.query(
        `SELECT lock_key, revoked_token::text, new_token_floor::text, operator, reason,
                holder_owner_id, holder_session_id::text
         FROM lock_revocation WHERE revocation_id = $1`,
        [res.body.revocationId],
      ),
    );
    expect(rows.rows).toEqual([
      {
        lock_key: 'audit:1',
        revoked_token: grant.body.fencingToken,
        new_token_floor: res.body.newTokenFloor,
        operator: 'ops-kim',
        reason: 'holder wedged on rail',
        holder_owner_id: 'audited',
        holder_session_id: s,
      },
    ]);
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
    for (const [env, name] of [
      [{ LOCK_BACKEND: 'pg' }, 'LOCKDB_URL'],
      [{ LOCK_BACKEND: 'mysql', LOCKDB_URL: dbUrl }, 'LOCK_BACKEND'],
      [{ LOCKDB_URL: dbUrl, LOCK_SESSION_TTL_MS: '500' }, 'LOCK_SESSION_TTL_MS'],
      [{ LOCKDB_URL: dbUrl, LOCK_WAITERS_MAX: 'many' }, 'LOCK_WAITERS_MAX'],
    ] as const) {
      const { code, output } = await new Promise<{ code: number | null; output: string }>(
        (resolve) => {
          const proc = spawn(process.execPath, [main], {
            env: { PATH: process.env.PATH ?? '', PORT: '0', ...env },
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
