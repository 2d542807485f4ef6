#!/usr/bin/env node
// Writes test/durations.json (seconds per test file, the slower ones) from a
// jest JSON report, for test/sequencer.js to start the slowest files first:
//   npx jest --ci --json --outputFile=.tmp/jest.json && node scripts/test-durations.js .tmp/jest.json
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
/** Files faster than this go in the default order; listing them would not shorten the tail. */
const LISTED_FROM_S = 5;

const report = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const durations = Object.fromEntries(
  report.testResults
    .map((r) => [path.relative(root, r.name), Math.round((r.endTime - r.startTime) / 100) / 10])
    .filter(([, s]) => s >= LISTED_FROM_S)
    .sort((a, b) => b[1] - a[1]),
);
fs.writeFileSync(
  path.join(root, 'test', 'durations.json'),
  JSON.stringify(durations, null, 2) + '\n',
);
console.log(
  `test/durations.json: ${Object.keys(durations).length} files of ${LISTED_FROM_S} s or more`,
);
