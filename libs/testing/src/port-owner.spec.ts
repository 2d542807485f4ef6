import { spawn } from 'node:child_process';
import net from 'node:net';
import { listensOn } from './port-owner';

describe('listensOn', () => {
  let server: net.Server;
  let port: number;

  beforeAll(async () => {
    server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
    port = (server.address() as net.AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('is true for the process that listens on the port', async () => {
    expect(await listensOn(process.pid, port)).toBe(true);
  });

  it('is false for another process, and for a port nobody listens on', async () => {
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 10000)']);
    try {
      expect(await listensOn(other.pid!, port)).toBe(false);
      server.close();
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await listensOn(process.pid, port)).toBe(false);
    } finally {
      other.kill();
    }
  });
});
