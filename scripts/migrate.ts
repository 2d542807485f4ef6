import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { EnvError, readDatabaseUrls } from '@dlock/config';
import { MIGRATIONS, type DatabaseName } from '../migrations';

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
    const ds = new DataSource({
      type: 'postgres',
      url,
      migrations: MIGRATIONS[db],
      logging: ['error'],
    });
    await ds.initialize();
    try {
      const done = await ds.runMigrations({ transaction: 'each' });
      console.log(`[migrate] ${db}: ${done.length} migration(s) applied`);
    } finally {
      await ds.destroy();
    }
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
