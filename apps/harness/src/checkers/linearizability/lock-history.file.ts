import { createReadStream, createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import type { LockCall } from '../../infra/lock-recorder.infra';

/** Lines one history file may hold (the recorder keeps at most a million calls). */
const LINES_MAX = 2_000_000;

/** The recorder's calls as JSON lines, one call a line (`--lock-history FILE`). */
export async function writeLockHistory(path: string, calls: readonly LockCall[]): Promise<void> {
  const out = createWriteStream(path);
  for (const call of calls) {
    if (!out.write(`${JSON.stringify(call)}\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

/** A history written by writeLockHistory (`npm run harness -- lin-check FILE`). */
export async function readLockHistory(path: string): Promise<LockCall[]> {
  const calls: LockCall[] = [];
  const lines = createInterface({ input: createReadStream(path), crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.trim() === '') continue;
    if (calls.length >= LINES_MAX) throw new Error(`${path}: more than ${LINES_MAX} calls`);
    calls.push(JSON.parse(line) as LockCall);
  }
  return calls;
}
