import { EnvError } from './env-error';

/**
 * The end of every app's bootstrap: a bad environment prints each offending
 * variable and exits 1, as does any other failure to start.
 */
export function exitOnStartFailure(app: string): (err: unknown) => never {
  return (err) => {
    if (err instanceof EnvError) console.error(`[${app}] ${err.message}`);
    else console.error(`[${app}] failed to start:`, err);
    process.exit(1);
  };
}
