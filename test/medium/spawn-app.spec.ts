// The test harness itself: an app whose port another process took first must
// not be reported as started (its health check would be answered by the other
// process, and the test would talk to the wrong service).
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { spawnApp, type RunningApp } from '@dlock/testing';

describe('spawnApp', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'spawn-app-'));
  const stub = (name: string) => ({
    RAIL_STUB_JOURNAL_PATH: path.join(dir, `${name}.journal`),
    RAIL_STUB_JOURNAL_FSYNC: 'false',
  });
  const apps: RunningApp[] = [];
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.stop()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('does not report an app started when another process answers on its port', async () => {
    const first = await spawnApp('rail-stub', stub('first'));
    apps.push(first);
    await expect(spawnApp('rail-stub', stub('second'), { port: first.port })).rejects.toThrow(
      `rail-stub: port ${first.port} is taken by another process`,
    );
  });

  // A port taken between freePort() and the app's listen: the app exits with
  // EADDRINUSE, and spawnApp must say so at once (it then tries a new port when
  // it chose the port itself) instead of polling a dead process for a minute.
  it('gives up at once when the app exits because its port is taken', async () => {
    const squatter = net.createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => squatter.listen(0, '0.0.0.0', resolve));
    const address = squatter.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    try {
      await expect(spawnApp('rail-stub', stub('third'), { port })).rejects.toThrow(
        `rail-stub: port ${port} is taken by another process`,
      );
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
  });
});
