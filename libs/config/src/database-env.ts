import { EnvPostgresUrl } from './env.decorators';
import { EnvError, type EnvSource } from './env-error';
import { validateEnv } from './validate-env';

/** The three databases' URLs, each optional: the migration and audit scripts act on those set. */
export class DatabaseUrlsEnv {
  @EnvPostgresUrl({ optional: true }) readonly LOCKDB_URL?: string;
  @EnvPostgresUrl({ optional: true }) readonly PAYDB_URL?: string;
  @EnvPostgresUrl({ optional: true }) readonly PROXYDB_URL?: string;
}

/** One database's URL, required: a TypeORM CLI data source or a CLI of one database. */
export function requiredDatabaseUrl(
  name: 'LOCKDB_URL' | 'PAYDB_URL' | 'PROXYDB_URL',
  source: EnvSource = process.env,
): string {
  // Only this variable is read: another database's URL does not concern this caller.
  const url = validateEnv(DatabaseUrlsEnv, { [name]: source[name] })[name];
  if (url === undefined) throw new EnvError([`${name}: is required`]);
  return url;
}

/**
 * The URL a TypeORM CLI data source (migrations/<db>/data-source.ts) connects to. The CLI wraps
 * whatever its data source file throws in "Unable to open file" and a stack trace, which buries
 * the variable's name: a bad or unset URL is printed here, alone, and the process exits 1, as an
 * app does (exitOnStartFailure).
 */
export function cliDatabaseUrl(
  name: 'LOCKDB_URL' | 'PAYDB_URL' | 'PROXYDB_URL',
  source: EnvSource = process.env,
): string {
  try {
    return requiredDatabaseUrl(name, source);
  } catch (err) {
    if (!(err instanceof EnvError)) throw err;
    console.error(`[typeorm data source] ${err.message}`);
    process.exit(1);
  }
}

/** Scripts and CLIs read the process's environment here; the apps go through AppConfigModule. */
export function readDatabaseUrls(source: EnvSource = process.env): DatabaseUrlsEnv {
  return validateEnv(DatabaseUrlsEnv, source);
}
