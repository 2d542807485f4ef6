/** A bad environment: every offending variable, one line each. The process stops with exit code 1. */
export class EnvError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'EnvError';
  }
}

/** What config code reads variables from: process.env, a `.env` file, or a test's own map. */
export type EnvSource = Record<string, string | undefined>;
