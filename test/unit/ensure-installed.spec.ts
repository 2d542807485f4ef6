import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, scratchDir } from '@dlock/testing';

/**
 * scripts/ensure-installed.js (run before `npm start`, `npm test` and
 * `npm run test:mutation`) reinstalls a stale node_modules, but never one that
 * is a link to another checkout's install: `npm ci` through the link empties
 * the shared target (it did, once, for every worktree sharing it).
 * A fake `npm` on PATH records whether it was called.
 */
function checkout(linked: boolean) {
  const dir = scratchDir('ensure-installed-');
  mkdirSync(path.join(dir, 'scripts'));
  copyFileSync(
    path.join(REPO_ROOT, 'scripts', 'ensure-installed.js'),
    path.join(dir, 'scripts', 'ensure-installed.js'),
  );
  const modules = linked ? path.join(dir, 'shared-install') : path.join(dir, 'node_modules');
  mkdirSync(modules);
  writeFileSync(path.join(modules, 'installed-package'), 'x');
  writeFileSync(path.join(modules, '.package-lock.json'), '{}');
  if (linked) symlinkSync(modules, path.join(dir, 'node_modules'));
  // The lock file is newer than the install (a worktree checked out after it).
  const old = new Date(Date.now() - 3_600_000);
  utimesSync(path.join(modules, '.package-lock.json'), old, old);
  writeFileSync(path.join(dir, 'package-lock.json'), '{}');
  const bin = path.join(dir, 'bin');
  mkdirSync(bin);
  writeFileSync(path.join(bin, 'npm'), `#!/bin/sh\necho "$@" > "${dir}/npm-ran"\n`);
  chmodSync(path.join(bin, 'npm'), 0o755);
  const out = execFileSync(process.execPath, [path.join(dir, 'scripts', 'ensure-installed.js')], {
    cwd: dir,
    env: { PATH: `${bin}:${process.env.PATH ?? ''}` },
  }).toString();
  return { out, npmRan: existsSync(path.join(dir, 'npm-ran')), modules };
}

describe('ensure-installed', () => {
  test('a stale node_modules of its own is reinstalled with npm ci', () => {
    const { npmRan, out } = checkout(false);
    expect({ npmRan, out }).toEqual({
      npmRan: true,
      out: '[dlock] installing dependencies (npm ci) ...\n',
    });
  });

  test('a node_modules linked to another install is left alone, however stale it looks', () => {
    const { npmRan, out, modules } = checkout(true);
    expect({ npmRan, out, kept: existsSync(path.join(modules, 'installed-package')) }).toEqual({
      npmRan: false,
      out: '[dlock] node_modules is a link to another install: using it as is (npm ci there to refresh)\n',
      kept: true,
    });
  });
});
