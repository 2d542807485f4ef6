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
  return holdsAny(pid, inodes);
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

/**
 * Who holds the socket listening on TCP `port`: each owner's pid, state letter and command
 * (Linux /proc; empty where it cannot tell). What a "port still in use" failure names, so a
 * leftover says whether it is a live process, a zombie or somebody else's.
 */
export async function listenerOwners(port: number): Promise<string[]> {
  const inodes = await listenerInodes(port);
  if (inodes === undefined || inodes.size === 0) return [];
  const owners: string[] = [];
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (!(await holdsAny(pid, inodes))) continue;
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const state = stat.charAt(stat.lastIndexOf(')') + 2) || '?';
    const cmd = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    owners.push(`${pid} ${state} ${cmd.split('\0').join(' ').trim()}`);
  }
  return owners.length > 0 ? owners : [`no process holds inode ${[...inodes].join(',')}`];
}

async function holdsAny(pid: number, inodes: Set<string>): Promise<boolean> {
  const fds = await readdir(`/proc/${pid}/fd`).catch(() => [] as string[]);
  for (const fd of fds) {
    const link = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    const inode = /^socket:\[(\d+)\]$/.exec(link)?.[1];
    if (inode !== undefined && inodes.has(inode)) return true;
  }
  return false;
}
