#!/usr/bin/env node
// The harness's real faults (docs/harness.md, "Partitions") use tools from Debian:
//   nft        package `nftables`: packet filter rules between loopback addresses
//   faketime   package `faketime`: a process's own view of the clock
// Installed here when missing and we can (root + apt); otherwise fail and say how.
'use strict';
const { execSync } = require('node:child_process');

const has = (cmd) => {
  try {
    execSync(`command -v ${cmd}`, { stdio: 'ignore', shell: '/bin/sh' });
    return true;
  } catch {
    return false;
  }
};
const TOOLS = [
  ['nft', 'nftables'],
  ['faketime', 'faketime'],
];
const missing = TOOLS.filter(([cmd]) => !has(cmd));
const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
if (missing.length > 0 && isRoot && has('apt-get')) {
  const pkgs = missing.map(([, pkg]) => pkg).join(' ');
  console.log(
    `[dlock] installing ${pkgs} (Debian) for the harness's partitions and clock faults ...`,
  );
  try {
    execSync(
      `apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${pkgs}`,
      { stdio: 'inherit', shell: '/bin/sh' },
    );
  } catch (err) {
    console.error(`[dlock] apt-get install ${pkgs} failed: ${err.message}`);
  }
}
const still = TOOLS.filter(([cmd]) => !has(cmd));
if (still.length > 0) {
  console.error('[dlock] the harness fault tests need, as root:');
  for (const [cmd, pkg] of still)
    console.error(`        - ${cmd}: \`sudo apt-get install ${pkg}\``);
  process.exit(1);
}
