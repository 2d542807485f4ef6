/**
 * The watchdog of one `npm start` (scripts/start.mjs; README, "Stopping"). The
 * supervisor starts it first, in a process group of its own, and writes to its
 * stdin each process it starts and each that exits (start-processes.ts). When
 * stdin closes, the supervisor is gone: after a clean stop it said "done" and
 * nothing is left; if it died (SIGKILL, a crash) without stopping its
 * children, the watchdog stops them in the supervisor's order, so no service
 * keeps running unowned, and exits.
 */
import { createInterface } from 'node:readline';
import { parseWatchdogLine, pollGone, stopInOrder, type Member } from './start-processes';

const log = (line: string) => console.log(`[watchdog] ${new Date().toISOString()} ${line}`);

function main(): void {
  const deadlineMs = Number(process.argv[2]);
  const supervisor = process.argv[3];
  if (!Number.isSafeInteger(deadlineMs) || deadlineMs <= 0 || !supervisor) {
    console.error(
      'usage: start-watchdog.js <stop deadline in ms> <supervisor pid>  (stdin: start-processes.ts)',
    );
    process.exit(2);
  }
  const members = new Map<number, Member>();
  let done = false;
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    const msg = parseWatchdogLine(line);
    if (msg === null) return;
    if ('add' in msg) members.set(msg.add.pid, msg.add);
    else if ('gone' in msg) members.delete(msg.gone);
    else done = true;
  });
  lines.on('close', () => {
    if (done && members.size === 0) process.exit(0);
    log(
      `the supervisor (pid ${supervisor}) is gone; stopping the ${members.size} process(es) it left`,
    );
    void stopInOrder([...members.values()], deadlineMs, (m, signal) => pollGone(m.pid, signal), log)
      .then(() => log('stopped'))
      .finally(() => process.exit(0));
  });
}

main();
