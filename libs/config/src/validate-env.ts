import { plainToInstance, type ClassConstructor } from 'class-transformer';
import { validateSync } from 'class-validator';
import { EnvError, type EnvSource } from './env-error';

/**
 * Builds an environment class from the raw variables and validates it: every
 * offending variable is named (the first broken rule of each), then EnvError
 * is thrown. Variables the class does not declare are ignored.
 */
export function validateEnv<T extends object>(envClass: ClassConstructor<T>, source: EnvSource): T {
  const env = plainToInstance(envClass, source, { excludeExtraneousValues: true });
  const errors = validateSync(env, { stopAtFirstError: true, forbidUnknownValues: true });
  const problems = errors.map((e) => `${e.property}: ${Object.values(e.constraints ?? {})[0]}`);
  if (problems.length > 0) throw new EnvError(problems);
  return Object.freeze(env);
}

/** The fencing kill switches exist for the harness's negative control only (docs/rail.md, "Kill switch (harness only)"). */
export function assertKillSwitchAllowed(name: string, enabled: boolean, source: EnvSource): void {
  if (!enabled && source.DLOCK_HARNESS !== '1') {
    throw new EnvError([
      `${name}=false is refused: it is allowed only under DLOCK_HARNESS=1 (the harness's negative control)`,
    ]);
  }
}
