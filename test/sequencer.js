// The slowest test files start first, so the run does not end with one worker
// alone on a two-minute file. Jest orders by the durations it remembers from
// earlier runs, but a fresh clone (CI) has none and falls back to file size;
// test/durations.json (written by scripts/test-durations.js) stands in for
// them. Order only: which tests run, and how, is unchanged.
'use strict';
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;
const measured = require('./durations.json');

class SlowestFirst extends Sequencer {
  sort(tests) {
    const ordered = super.sort(tests);
    const seconds = (t) => {
      const known = measured[path.relative(t.context.config.rootDir, t.path)];
      return known ?? (t.duration ?? 0) / 1000;
    };
    // Array.prototype.sort is stable: files of equal estimate keep jest's order.
    return ordered.sort((a, b) => seconds(b) - seconds(a));
  }
}

module.exports = SlowestFirst;
