import { once } from 'node:events';
import net from 'node:net';
import { spawnGroup } from './children';

/**
 * A loopback port whose listener never accepts (a child process that blocks
 * right after listen) and whose accept queue is full, so a further connect
 * hangs in the handshake: how a connect timeout is tested without leaving
 * the machine. `close()` kills the child (it also exits by itself after 30 s).
 */
export async function unacceptingPort(): Promise<{ port: number; close: () => void }> {
  const child = spawnGroup(process.execPath, [
    '-e',
    `const s = require('node:net').createServer();
     s.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
       process.stdout.write(s.address().port + '\\n');
       Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 30000);
     });`,
  ]);
  const [line] = (await once(child.stdout, 'data')) as [Buffer];
  const port = Number(line.toString().trim());
  // Linux queues backlog + 1 finished handshakes: these two fill the queue.
  const fillers = [0, 1].map(() => net.connect({ port, host: '127.0.0.1' }));
  await Promise.all(fillers.map((f) => once(f, 'connect')));
  return {
    port,
    close: () => {
      fillers.forEach((f) => f.destroy());
      child.kill('SIGKILL');
    },
  };
}
