import net from 'node:net';

/**
 * Port 1 (tcpmux): privileged and below the kernel's ephemeral range, so no
 * test's server can be handed it, unlike a port freePort() found free a moment
 * ago, which another test file may take before it is dialled.
 */
const REFUSING_PORT = 1;

/**
 * A loopback port every connect to is refused (ECONNREFUSED) for the whole
 * run: where a test needs a peer that is down, or a URL nothing may answer.
 * Checked before it is handed out.
 */
export async function refusingPort(): Promise<number> {
  const refused = await new Promise<boolean>((resolve) => {
    const socket = net.connect({ port: REFUSING_PORT, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
  if (!refused) {
    throw new Error(`127.0.0.1:${REFUSING_PORT} does not refuse connections; the tests need it to`);
  }
  return REFUSING_PORT;
}
