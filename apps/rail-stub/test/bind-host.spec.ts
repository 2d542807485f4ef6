import net from 'node:net';
import path from 'node:path';
import { scratchDir, spawnApp, type RunningApp } from '@dlock/testing';

/** Whether a TCP connection to `host:port` is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * `npm start` on a laptop must not put the unauthenticated rail (or any
 * service) on the network: every service binds BIND_HOST, loopback unless
 * told otherwise (docs/operations.md). 127.0.0.2 is loopback too, but not the
 * address bound: it answers only a service bound to every interface.
 */
describe('the address a service binds', () => {
  const apps: RunningApp[] = [];
  afterAll(() => Promise.all(apps.map((a) => a.stop())));

  async function portOf(env: Record<string, string>): Promise<number> {
    const app = await spawnApp('rail-stub', {
      RAIL_STUB_JOURNAL_PATH: path.join(scratchDir('rail-stub-bind-'), 'journal.jsonl'),
      RAIL_STUB_JOURNAL_FSYNC: 'false',
      ...env,
    });
    apps.push(app);
    return Number(new URL(app.url).port);
  }

  it('is 127.0.0.1 by default, and every interface only when BIND_HOST says so', async () => {
    const loopback = await portOf({});
    expect(await accepts('127.0.0.1', loopback)).toBe(true);
    expect(await accepts('127.0.0.2', loopback)).toBe(false);
    const everywhere = await portOf({ BIND_HOST: '0.0.0.0' });
    expect(await accepts('127.0.0.2', everywhere)).toBe(true);
  });
});
