#!/usr/bin/env node
// Installs dependencies when node_modules is missing or older than the lock file,
// so `npm start` and `npm test` work on a fresh clone with no other step.
'use strict';
const { existsSync, statSync } = require('node:fs');
const { execSync } = require('node:child_process');
const { join } = require('node:path');

const root = join(__dirname, '..');
const marker = join(root, 'node_modules', '.package-lock.json');
const lock = join(root, 'package-lock.json');
const stale =
  !existsSync(marker) ||
  (existsSync(lock) && statSync(lock).mtimeMs > statSync(marker).mtimeMs + 1000);
if (stale) {
  console.log('[dlock] installing dependencies (npm ci) ...');
  execSync('npm ci --no-audit --no-fund', { cwd: root, stdio: 'inherit' });
}
