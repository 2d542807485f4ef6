#!/usr/bin/env node
// One TypeScript pass over every app and lib, aliases rewritten. Each app's
// entry is `dist/apps/<app>/main.js` (from apps/<app>/main.ts), the layout
// `npx nest build <app>` emits too (nest-cli.json, apps/<app>/tsconfig.app.json).
'use strict';
const { execSync } = require('node:child_process');
const { rmSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const bin = (name) => join(root, 'node_modules', '.bin', name);
rmSync(join(root, 'dist'), { recursive: true, force: true });
execSync(`"${bin('tsc')}" -p tsconfig.build.json`, { cwd: root, stdio: 'inherit' });
execSync(`"${bin('tsc-alias')}" -p tsconfig.build.json`, { cwd: root, stdio: 'inherit' });
console.log('[dlock] build complete: dist/apps/<app>/main.js');
