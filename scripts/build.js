#!/usr/bin/env node
// One TypeScript pass over every app and lib, aliases rewritten. Each app's
// entry is `dist/apps/<app>/main.js` (from apps/<app>/main.ts), the layout
// `npx nest build <app>` emits too (nest-cli.json, apps/<app>/tsconfig.app.json).
'use strict';
const { execSync } = require('node:child_process');
const { cpSync, existsSync, readdirSync, rmSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const bin = (name) => join(root, 'node_modules', '.bin', name);
rmSync(join(root, 'dist'), { recursive: true, force: true });
execSync(`"${bin('tsc')}" -p tsconfig.build.json`, { cwd: root, stdio: 'inherit' });
execSync(`"${bin('tsc-alias')}" -p tsconfig.build.json`, { cwd: root, stdio: 'inherit' });
// Files an app serves as they are (the console's page): no build step of their own.
for (const app of readdirSync(join(root, 'apps'))) {
  const assets = join(root, 'apps', app, 'static');
  if (existsSync(assets))
    cpSync(assets, join(root, 'dist', 'apps', app, 'static'), { recursive: true });
}
console.log('[dlock] build complete: dist/apps/<app>/main.js');
