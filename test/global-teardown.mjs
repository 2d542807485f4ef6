import { rmSync } from 'node:fs';

export default async function globalTeardown() {
  const state = globalThis.__DLOCK_PG__;
  if (!state) return;
  await state.pg.stop().catch(() => undefined);
  if (state.dir) rmSync(state.dir, { recursive: true, force: true });
}
