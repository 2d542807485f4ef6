#!/usr/bin/env node
// `npm run lint`: eslint and prettier side by side (each mostly uses one core;
// together they take as long as eslint alone). Fails when either fails; their
// output is printed whole, one after the other. `--build` runs the build
// (scripts/build.js) beside them too: `npm test` does, and the three take
// about as long as eslint alone.
'use strict';
const { spawn } = require('node:child_process');
const path = require('node:path');

const root = path.join(__dirname, '..');
const bin = (name) => path.join(root, 'node_modules', '.bin', name);

function run(cmd, args) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    child.on('error', (err) => resolve({ code: 1, out: `${cmd}: ${err.message}\n` }));
    child.on('close', (code, signal) => resolve({ code: code ?? 1, signal, out }));
  });
}

(async () => {
  const build = process.argv.includes('--build')
    ? [run(process.execPath, [path.join(__dirname, 'build.js')])]
    : [];
  const results = await Promise.all([
    run(bin('eslint'), ['.', '--max-warnings', '0']),
    run(bin('prettier'), ['--check', '.']),
    ...build,
  ]);
  for (const r of results) process.stdout.write(r.out);
  process.exitCode = results.every((r) => r.code === 0) ? 0 : 1;
})();
