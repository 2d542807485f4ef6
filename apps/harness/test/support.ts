import { rmSync } from 'node:fs';
import path from 'node:path';
import { externalPg, type PgServer } from '../src/infra/postgres.infra';
import { repoRoot } from '../src/infra/repo.infra';

/** The jest run's shared PostgreSQL (test/global-setup.mjs). */
export function testPg(): PgServer {
  const url = process.env.DLOCK_TEST_PG_URL;
  if (!url) throw new Error('DLOCK_TEST_PG_URL is not set: run through jest');
  return externalPg(url);
}

export function testWorkDir(name: string): string {
  return path.join(repoRoot(), '.tmp', `harness-${name}-${process.pid}`);
}

/** Short, fixed seed: every jest run replays the same schedule. */
export const TEST_SEED = 7;

export const log = (m: string): void => {
  if (process.env.HARNESS_VERBOSE) console.log(m);
};

/** Rail journals and etcd data of a jest run; the databases stay on the shared server. */
export function removeWorkDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
