#!/usr/bin/env node
// Installs dependencies when node_modules is missing or older than the lock file,
// so `npm start` and `npm test` work on a fresh clone with no other step.
'use strict';
const { existsSync, lstatSync, statSync } = require('node:fs');
const { execSync } = require('node:child_process');
const { join } = require('node:path');

const root = join(__dirname, '..');
const modules = join(root, 'node_modules');
const marker = join(modules, '.package-lock.json');
const lock = join(root, 'package-lock.json');
const stale =
  !existsSync(marker) ||
  (existsSync(lock) && statSync(lock).mtimeMs > statSync(marker).mtimeMs + 1000);
// A linked node_modules (a git worktree sharing another checkout's install) is
// that checkout's: `npm ci` here would empty the link's target under everyone
// using it, so it is used as it is.
const linked = existsSync(modules) && lstatSync(modules).isSymbolicLink();
if (stale && linked) {
  console.log(
    '[dlock] node_modules is a link to another install: using it as is (npm ci there to refresh)',
  );
} else if (stale) {
  console.log('[dlock] installing dependencies (npm ci) ...');
  execSync('npm ci --no-audit --no-fund', { cwd: root, stdio: 'inherit' });
}
