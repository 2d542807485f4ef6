import { uc01 } from './uc01-happy-path.scenario';
import { uc02 } from './uc02-contention.scenario';
import { uc03 } from './uc03-paused-worker.scenario';
import { uc04 } from './uc04-crash.scenario';
import { uc05 } from './uc05-ambiguous.scenario';
import { uc06 } from './uc06-revoke.scenario';
import { uc07 } from './uc07-failover.scenario';
import { uc08 } from './uc08-lock-unavailable.scenario';
import type { Scenario } from './scenario.types';

/** Run order on one shared system: the failover scenario last, it restarts things. */
export const SCENARIOS: readonly Scenario[] = [uc01, uc02, uc03, uc04, uc05, uc06, uc08, uc07];

export function scenarioById(id: string): Scenario | undefined {
  const norm = id
    .toUpperCase()
    .replace(/^UC-?/, 'UC-')
    .replace(/^UC-(\d)$/, 'UC-0$1');
  return SCENARIOS.find((s) => s.id === norm);
}

export { uc01, uc02, uc03, uc04, uc05, uc06, uc07, uc08 };
export { runPausedWorker } from './uc03-paused-worker.scenario';
export * from './scenario.types';
