import type { FenceWatch } from '../checkers/fence-watch.checker';
import type { InvariantReport } from '../checkers/invariants.checker';
import type { LinearizabilityReport } from '../checkers/linearizability';
import type { PgServer } from '../infra/postgres.infra';
import type { DlockSystem } from '../dlock-system.infra';

export type Scale = 'short' | 'full';

export interface ScenarioContext {
  sys: DlockSystem;
  watch: FenceWatch;
  pg: PgServer;
  seed: number;
  scale: Scale;
  log: (msg: string) => void;
}

/** What a scenario proves on its own: that its fault really happened, and what the system did. */
export interface ScenarioOutcome {
  evidence: Record<string, unknown>;
  /** Evidence that is missing or wrong: a non-empty list fails the scenario. */
  failures: string[];
}

export interface ScenarioResult extends ScenarioOutcome {
  id: string;
  title: string;
  passed: boolean;
  invariants: InvariantReport;
  /** The lock-server history so far, judged by the linearizability checker. */
  linearizability: LinearizabilityReport;
  durationMs: number;
}

export interface Scenario {
  id: string;
  title: string;
  run(ctx: ScenarioContext): Promise<ScenarioOutcome>;
}

/** Collects evidence and the checks on it, so every scenario reads the same way. */
export class Evidence {
  readonly evidence: Record<string, unknown> = {};
  readonly failures: string[] = [];

  set(name: string, value: unknown): void {
    this.evidence[name] = value;
  }

  expect(ok: boolean, what: string): void {
    if (!ok) this.failures.push(what);
  }

  outcome(): ScenarioOutcome {
    return { evidence: this.evidence, failures: this.failures };
  }
}
