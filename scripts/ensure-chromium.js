#!/usr/bin/env node
// The console's browser tests drive Debian's chromium through playwright-core
// (no browser download). Install it when missing and we can (root + apt);
// otherwise say how to get it.
'use strict';
const { execSync } = require('node:child_process');
const { existsSync } = require('node:fs');

const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';

function has(cmd) {
  try {
    execSync(`command -v ${cmd}`, { stdio: 'ignore', shell: '/bin/sh' });
    return true;
  } catch {
    return false;
  }
}

if (existsSync(CHROMIUM)) process.exit(0);
const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
if (isRoot && has('apt-get')) {
  console.log('[dlock] installing chromium (Debian) for the console browser tests ...');
  try {
    execSync(
      'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium',
      {
        stdio: 'inherit',
        shell: '/bin/sh',
      },
    );
  } catch (err) {
    console.error('[dlock] apt-get install chromium failed:', err.message);
  }
}
if (!existsSync(CHROMIUM)) {
  console.error(
    `[dlock] chromium is required by the console browser tests and was not found at ${CHROMIUM}.\n` +
      '        Install it with `sudo apt-get install chromium` (Debian/Ubuntu), or set CHROMIUM_BIN to a Chromium binary.',
  );
  process.exit(1);
}
