import { readFile, rename, writeFile } from 'node:fs/promises';

/**
 * The reconciler's memory kept across restarts in a JSON file of its own
 * (audit checkpoints, detective cursors): the reconciler reads the databases
 * as a read-only role, so a file is where it may write.
 */

/** The file's value, or undefined when there is no file yet. Other read errors are thrown. */
export async function readStateFile(file: string): Promise<unknown> {
  const text = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  return text === undefined ? undefined : (JSON.parse(text) as unknown);
}

/** Written whole to a new file, then renamed over the old one: a crash leaves one or the other. */
export async function writeStateFile(file: string, value: unknown): Promise<void> {
  await writeFile(`${file}.tmp`, JSON.stringify(value, null, 2), { encoding: 'utf8', mode: 0o600 });
  await rename(`${file}.tmp`, file);
}
