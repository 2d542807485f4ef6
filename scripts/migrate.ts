import 'reflect-metadata';
import { EnvError, readDatabaseUrls } from '@dlock/config';
import { MIGRATIONS, type DatabaseName } from '../migrations';
import { migrateDatabase } from '@dlock/persistence';

/** `npm run db:migrate`: migrates every database whose URL is set. */
async function main(): Promise<void> {
  const config = readDatabaseUrls();
  const targets: [DatabaseName, string | undefined][] = [
    ['lockdb', config.LOCKDB_URL],
    ['paydb', config.PAYDB_URL],
    ['proxydb', config.PROXYDB_URL],
  ];
  let ran = 0;
  for (const [db, url] of targets) {
    if (!url) continue;
    const done = await migrateDatabase(url, MIGRATIONS[db]);
    console.log(`[migrate] ${db}: ${done.length} migration(s) applied`);
    ran++;
  }
  if (ran === 0)
    console.log(
      '[migrate] no database URL set (LOCKDB_URL, PAYDB_URL, PROXYDB_URL): nothing to do',
    );
}

main().catch((err: unknown) => {
  // A bad URL names its variable, not a stack trace (README, "Configuration").
  if (err instanceof EnvError) console.error(`[migrate] ${err.message}`);
  else console.error('[migrate] failed:', err);
  process.exit(1);
});
