#!/usr/bin/env node
// The libraries published as npm packages (docs/extending.md, "1. Install"):
// the root package.json's workspaces. libs/<lib>/package.json describes the
// package as packed; `build` assembles it in .tmp/packages/<lib> (that
// package.json, README, CHANGELOG, and dist/ compiled by the lib's own
// tsconfig.build.json), dependencies first. A package resolves its @dlock/*
// imports as those built packages, never as sources, so an import of
// something another package does not export fails here. Never beside the
// sources: with a built dist/ behind its workspace link, `nest build` would
// leave `@dlock/<lib>` imports to the package instead of rewriting the alias.
// `pack` builds, then writes one tarball per package (default dist/packages/).
//   node scripts/packages.js build
//   node scripts/packages.js pack [--out <dir>]
'use strict';
const { execFileSync } = require('node:child_process');
const { copyFileSync, mkdirSync, readFileSync, rmSync } = require('node:fs');
const { join, resolve } = require('node:path');

const root = join(__dirname, '..');
/** Where each package is assembled; the libs' tsconfig.build.json files name it too. */
const staging = join(root, '.tmp', 'packages');
const readJson = (path) => JSON.parse(readFileSync(path, 'utf8'));

/** The workspaces, each after the @dlock/* packages it depends on. */
function packagesInOrder() {
  const dirs = readJson(join(root, 'package.json')).workspaces;
  const byName = new Map(
    dirs.map((dir) => {
      const pkg = readJson(join(root, dir, 'package.json'));
      return [pkg.name, { dir, pkg }];
    }),
  );
  const ordered = [];
  const visiting = new Set();
  const visit = (name) => {
    const entry = byName.get(name);
    if (!entry) throw new Error(`${name} is not one of the workspaces`);
    if (ordered.includes(entry)) return;
    if (visiting.has(name)) throw new Error(`dependency cycle through ${name}`);
    visiting.add(name);
    for (const dep of Object.keys(entry.pkg.dependencies ?? {}))
      if (dep.startsWith('@dlock/')) visit(dep);
    ordered.push(entry);
  };
  for (const name of byName.keys()) visit(name);
  return ordered;
}

/** Assembles every package in .tmp/packages/<lib>; returns those directories. */
function build() {
  const packages = packagesInOrder();
  // From scratch: a file whose source is gone must not stay in a package.
  rmSync(staging, { recursive: true, force: true });
  const dirs = packages.map(({ dir }) => {
    const out = join(staging, dir.split('/').pop());
    mkdirSync(out, { recursive: true });
    // The package.json first: the packages built after this one resolve it through it.
    for (const file of ['package.json', 'README.md', 'CHANGELOG.md'])
      copyFileSync(join(root, dir, file), join(out, file));
    return out;
  });
  // One `tsc -b` over every package, in this order: half the time of one tsc per package.
  const configs = packages.map(({ dir }) => join(dir, 'tsconfig.build.json'));
  execFileSync(join(root, 'node_modules', '.bin', 'tsc'), ['-b', ...configs], {
    cwd: root,
    stdio: 'inherit',
  });
  return dirs;
}

/** Builds, then packs every package into `out`; returns the tarballs' paths. */
function pack(out) {
  const dirs = build();
  mkdirSync(out, { recursive: true });
  const report = execFileSync(
    'npm',
    ['pack', ...dirs, '--pack-destination', out, '--json', '--ignore-scripts'],
    { cwd: staging, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return JSON.parse(report).map((p) => join(out, p.filename));
}

module.exports = { packagesInOrder, build, pack };

if (require.main === module) {
  const [command, flag, value] = process.argv.slice(2);
  if (command === 'build') {
    build();
    console.log('[dlock] packages built: .tmp/packages/<lib>');
  } else if (command === 'pack') {
    const out = flag === '--out' && value ? resolve(value) : join(root, 'dist', 'packages');
    for (const tarball of pack(out)) console.log(tarball);
  } else {
    console.error('usage: node scripts/packages.js build | pack [--out <dir>]');
    process.exit(2);
  }
}
