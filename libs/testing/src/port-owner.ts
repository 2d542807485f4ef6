import { readFile, readdir, readlink } from 'node:fs/promises';

/**
 * Whether process `pid` holds the socket listening on TCP `port` (Linux
 * /proc). Two jest workers can be handed the same free port; the app that
 * loses the race exits, but until it does its health check is answered by
 * the other worker's app, and the test talks to the wrong service. Reading
 * the listener's owner makes that visible instead of a stray 404.
 * Where /proc is missing (not Linux) it answers true: no check, as before.
 */
export async function listensOn(pid: number, port: number): Promise<boolean> {
  const inodes = await listenerInodes(port);
  if (inodes === undefined) return true;
  const fds = await readdir(`/proc/${pid}/fd`).catch(() => [] as string[]);
  for (const fd of fds) {
    const link = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    const inode = /^socket:\[(\d+)\]$/.exec(link)?.[1];
    if (inode !== undefined && inodes.has(inode)) return true;
  }
  return false;
}

const TCP_LISTEN = '0A';

/** Inodes of the sockets listening on `port` (IPv4 and IPv6), or undefined without /proc. */
async function listenerInodes(port: number): Promise<Set<string> | undefined> {
  const tables = await Promise.all(
    ['/proc/net/tcp', '/proc/net/tcp6'].map((f) => readFile(f, 'utf8').catch(() => undefined)),
  );
  if (tables.every((t) => t === undefined)) return undefined;
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set<string>();
  for (const line of tables.flatMap((t) => (t ?? '').split('\n').slice(1))) {
    const cols = line.trim().split(/\s+/);
    if (cols.length < 10 || cols[3] !== TCP_LISTEN) continue;
    if (cols[1].split(':').pop() === hexPort) inodes.add(cols[9]);
  }
  return inodes;
}

/** Whether anything listens on TCP `port` (Linux /proc; true where it cannot tell). */
export async function portListening(port: number): Promise<boolean> {
  const inodes = await listenerInodes(port);
  return inodes === undefined || inodes.size > 0;
}
