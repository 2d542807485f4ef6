#!/usr/bin/env node
// One TypeScript pass over every app and lib, aliases rewritten. Each app's
// entry is `dist/apps/<app>/main.js` (from apps/<app>/main.ts), the layout
// `npx nest build <app>` emits too (nest-cli.json, apps/<app>/tsconfig.app.json).
//
// Incremental (README, "The two commands"): `tsc -b` with its build info in
// dist/ recompiles only what changed and says "up to date" in under a second
// when nothing did; tsc-alias, the pruning of outputs whose source is gone and
// the asset copy run only after tsc wrote something. `--clean` builds from nothing.
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const { dirname, join, relative, resolve, sep } = require('node:path');

const root = join(__dirname, '..');
const dist = join(root, 'dist');
const bin = (name) => join(root, 'node_modules', '.bin', name);
/** tsconfig.build.json plus the build info file (scripts/tsconfig.incremental.json). */
const config = join(__dirname, 'tsconfig.incremental.json');
const buildInfo = join(dist, '.tsbuildinfo');
/** Written last: a build interrupted after tsc (before tsc-alias) is finished by the next one. */
const stamp = join(dist, '.build-complete');

const mtime = (file) => (fs.existsSync(file) ? fs.statSync(file).mtimeMs : -1);

/** The repository's own sources in the last compilation, or null when the build info is unreadable. */
function compiledSources() {
  try {
    const { fileNames } = JSON.parse(fs.readFileSync(buildInfo, 'utf8'));
    if (!Array.isArray(fileNames)) return null;
    return new Set(
      fileNames
        .map((f) => resolve(dist, f))
        .filter((f) => f.startsWith(root + sep) && !f.includes(`${sep}node_modules${sep}`))
        .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')),
    );
  } catch {
    return null;
  }
}

const outputOf = (source) => join(dist, relative(root, source)).replace(/\.ts$/, '.js');

/**
 * tsc -b trusts its build info: a dist missing an output, or built before the installed
 * packages changed (their types shape decorator metadata), is rebuilt from scratch.
 */
function distTrusted() {
  if (!fs.existsSync(buildInfo)) return false;
  const sources = compiledSources();
  if (sources === null) return false;
  for (const source of sources) if (!fs.existsSync(outputOf(source))) return false;
  return mtime(join(root, 'node_modules', '.package-lock.json')) < mtime(buildInfo);
}

/** Removes the outputs of sources no longer compiled (a deleted migration must not run). */
function pruneStale(sources) {
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'static') walk(path);
      } else if (/\.js(\.map)?$/.test(entry.name)) {
        const source = join(root, relative(dist, path)).replace(/\.js(\.map)?$/, '.ts');
        if (!sources.has(source)) fs.rmSync(path);
      }
    }
  };
  walk(dist);
}

/** Files an app serves as they are (the console's page): no build step of their own. */
function assetDirs() {
  return fs
    .readdirSync(join(root, 'apps'))
    .map((app) => ({
      from: join(root, 'apps', app, 'static'),
      to: join(dist, 'apps', app, 'static'),
    }))
    .filter(({ from }) => fs.existsSync(from));
}

function newestIn(dir) {
  let newest = mtime(dir);
  for (const entry of fs.readdirSync(dir, { recursive: true }))
    newest = Math.max(newest, mtime(join(dir, entry)));
  return newest;
}

function copyAssets(force) {
  for (const { from, to } of assetDirs()) {
    if (!force && fs.existsSync(to) && newestIn(from) <= mtime(stamp)) continue;
    fs.rmSync(to, { recursive: true, force: true });
    fs.mkdirSync(dirname(to), { recursive: true });
    fs.cpSync(from, to, { recursive: true });
  }
}

function main() {
  if (process.argv.includes('--clean')) fs.rmSync(dist, { recursive: true, force: true });
  if (!distTrusted()) {
    fs.rmSync(buildInfo, { force: true });
    fs.rmSync(stamp, { force: true });
  }
  execFileSync(bin('tsc'), ['-b', config], { cwd: root, stdio: 'inherit' });
  const compiled = mtime(buildInfo) > mtime(stamp);
  if (compiled) {
    execFileSync(bin('tsc-alias'), ['-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
    const sources = compiledSources();
    if (sources === null) throw new Error('dist/.tsbuildinfo unreadable right after tsc wrote it');
    pruneStale(sources);
  }
  copyAssets(compiled);
  fs.writeFileSync(stamp, `${new Date().toISOString()}\n`);
  console.log(
    compiled
      ? '[dlock] build complete: dist/apps/<app>/main.js'
      : '[dlock] build up to date: dist/apps/<app>/main.js',
  );
}

main();
