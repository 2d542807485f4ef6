#!/usr/bin/env node
// One TypeScript pass over every app and lib, aliases rewritten, then a
// `dist/apps/<app>/main.js` entry per app (DECISIONS §8).
'use strict';
const { execSync } = require('node:child_process');
const { cpSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const bin = (name) => join(root, 'node_modules', '.bin', name);
rmSync(join(root, 'dist'), { recursive: true, force: true });
execSync(`"${bin('tsc')}" -p tsconfig.build.json`, { cwd: root, stdio: 'inherit' });
execSync(`"${bin('tsc-alias')}" -p tsconfig.build.json`, { cwd: root, stdio: 'inherit' });
for (const app of readdirSync(join(root, 'apps'))) {
  const compiled = join(root, 'dist', 'apps', app, 'src', 'main.js');
  if (!existsSync(compiled)) continue;
  mkdirSync(join(root, 'dist', 'apps', app), { recursive: true });
  writeFileSync(
    join(root, 'dist', 'apps', app, 'main.js'),
    "'use strict';\nrequire('./src/main.js');\n",
  );
  // Files an app serves as they are (the console's page): no build step of their own.
  const assets = join(root, 'apps', app, 'static');
  if (existsSync(assets))
    cpSync(assets, join(root, 'dist', 'apps', app, 'static'), { recursive: true });
}
console.log('[dlock] build complete: dist/apps/<app>/main.js');
