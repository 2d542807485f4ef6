#!/usr/bin/env node
// The etcd tests spawn real etcd processes (Debian's etcd-server). Install it
// when missing and we can (root + apt); otherwise say how to get it.
'use strict';
const { execSync } = require('node:child_process');

function has(cmd) {
  try {
    execSync(`command -v ${cmd}`, { stdio: 'ignore', shell: '/bin/sh' });
    return true;
  } catch {
    return false;
  }
}

if (process.env.ETCD_BIN || has('etcd')) process.exit(0);
const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
if (isRoot && has('apt-get')) {
  console.log('[dlock] installing etcd-server (Debian) for the etcd tests ...');
  try {
    execSync(
      'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server',
      {
        stdio: 'inherit',
        shell: '/bin/sh',
      },
    );
    // The package starts a system etcd on 2379; the tests use their own ports, but stop it anyway.
    try {
      execSync('(systemctl stop etcd || service etcd stop || pkill -x etcd) >/dev/null 2>&1', {
        shell: '/bin/sh',
      });
    } catch {
      /* not running */
    }
  } catch (err) {
    console.error('[dlock] apt-get install etcd-server failed:', err.message);
  }
}
if (!has('etcd')) {
  console.error(
    '[dlock] etcd is required by the etcd backend tests and could not be installed.\n' +
      '        Install it with `sudo apt-get install etcd-server` (Debian/Ubuntu), or set ETCD_BIN to an etcd 3.4+ binary.',
  );
  process.exit(1);
}
