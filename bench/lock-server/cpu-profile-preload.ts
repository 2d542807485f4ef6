/**
 * Preloaded into a lock-server by auth-cost.ts (BENCH_CPU_PROF_DIR): records a V8
 * CPU profile from start and writes it on SIGTERM. `node --cpu-prof` writes only on
 * a normal exit, and Nest's shutdown hook re-raises the signal, so it writes nothing.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import path from 'node:path';

const dir = process.env.BENCH_CPU_PROF_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.start');
  // Registered before Nest's own listener, so it runs first.
  process.once('SIGTERM', () => {
    session.post('Profiler.stop', (err, res) => {
      if (err) return;
      const file = path.join(dir, `lock-server-${process.pid}.cpuprofile`);
      writeFileSync(file, JSON.stringify(res.profile));
    });
  });
}
