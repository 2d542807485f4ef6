import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { REPO_ROOT } from '@dlock/testing';

/**
 * test/workers.js keys a test run by the `npm test` process around it, so the
 * note pretest leaves and the count jest.config.js makes name the same run
 * (CONTRIBUTING.md, "Before a change lands").
 */
// The module is CommonJS: jest.config.js and the ESM global teardown load it too.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { runKey, parentPid } = require('../workers.js') as {
  runKey(pid: number, read: (pid: number, file: string) => string): number;
  parentPid(stat: string): number;
};

/** A process table: pid -> [ppid, cmdline as /proc gives it]. */
function table(procs: Record<number, [number, string]>) {
  return (pid: number, file: string): string => {
    const proc = procs[pid];
    if (proc === undefined) throw Object.assign(new Error('gone'), { code: 'ENOENT' });
    return file === 'stat' ? `${pid} (${proc[1].split('\0')[0]}) S ${proc[0]} ${pid} 1 0` : proc[1];
  };
}

describe('parentPid', () => {
  it('reads the field after the command, also when the command holds spaces and parentheses', () => {
    expect(parentPid('4242 (node) S 4200 4242 1 0 -1')).toBe(4200);
    expect(parentPid('4242 (a) (b) S x) S 17 4242 1 0 -1')).toBe(17);
  });
});

describe('runKey', () => {
  it('is the nearest npm ancestor: jest under sh under `npm test`', () => {
    const read = table({
      10: [1, 'npm test\0\0\0\0'],
      11: [10, 'sh\0-c\0jest --ci\0'],
      12: [11, 'node\0/repo/node_modules/.bin/jest\0--ci\0'],
    });
    expect(runKey(12, read)).toBe(10);
    expect(runKey(10, read)).toBe(10);
  });

  it('passes over processes that only mention npm', () => {
    const read = table({
      20: [1, 'npm exec jest\0'],
      21: [20, 'node\0/usr/lib/node_modules/npm/bin/npm-cli.js\0test\0'],
      22: [21, 'npmish\0'],
      23: [22, 'node\0test/workers.js\0--note\0'],
    });
    expect(runKey(23, read)).toBe(20);
  });

  it('is the process itself without an npm ancestor, or when an ancestor is gone', () => {
    expect(runKey(31, table({ 30: [1, 'bash\0'], 31: [30, 'node\0jest\0'] }))).toBe(31);
    expect(runKey(41, table({ 41: [40, 'node\0jest\0'] }))).toBe(41);
  });

  it('finds a real npm-titled process through /proc from a grandchild', () => {
    // The stand-in for `npm test` titles itself as npm does, then runs `sh -c node ...`.
    const child = `process.title = 'npm test'; const { execSync } = require('node:child_process');
      const out = execSync(${JSON.stringify(
        `node -e "console.log(require('${path.join(REPO_ROOT, 'test', 'workers.js')}').runKey())"`,
      )});
      console.log(String(out).trim() + ' ' + process.pid);`;
    const [key, npm] = execFileSync(process.execPath, ['-e', child], { timeout: 20_000 })
      .toString()
      .trim()
      .split(' ');
    expect(key).toBe(npm);
  });
});
